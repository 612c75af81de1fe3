-- group by a string column and two keys
SELECT store_and_fwd_flag, vendor_id, COUNT(*) AS trips, MIN(trip_distance) AS shortest
FROM trips
WHERE passenger_count IN (1, 2, 3)
GROUP BY store_and_fwd_flag, vendor_id
ORDER BY store_and_fwd_flag, vendor_id
