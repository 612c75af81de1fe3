-- one day of trips: zone maps skip the rest of the time-ordered table
SELECT COUNT(*) AS trips, AVG(trip_distance) AS avg_distance, MIN(pickup_datetime) AS first_pickup, MAX(dropoff_datetime) AS last_dropoff
FROM trips
WHERE pickup_datetime BETWEEN TIMESTAMP '2019-03-01 00:00:00' AND TIMESTAMP '2019-03-01 23:59:59'
