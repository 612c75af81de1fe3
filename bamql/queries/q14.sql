-- busiest pickup zones, HAVING and ORDER BY ... LIMIT
SELECT pickup_location_id, COUNT(*) AS trips, AVG(trip_distance) AS avg_distance
FROM trips
WHERE trip_distance > 0
GROUP BY pickup_location_id
HAVING COUNT(*) >= 10
ORDER BY trips DESC, pickup_location_id
LIMIT 10
