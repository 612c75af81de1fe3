-- JFK (zone 132) at either end
SELECT COUNT(*) AS trips, SUM(total_amount) AS revenue, AVG(tolls_amount) AS tolls
FROM trips
WHERE pickup_location_id = 132 OR dropoff_location_id = 132
