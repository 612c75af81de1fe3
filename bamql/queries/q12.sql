-- store-and-forward trips by vendor (dictionary-coded string predicate)
SELECT vendor_id, COUNT(*) AS trips, AVG(trip_distance) AS avg_distance
FROM trips
WHERE store_and_fwd_flag = 'Y'
GROUP BY vendor_id
ORDER BY vendor_id
