-- day of week (Sunday = 0), low selectivity in Williamsburg
SELECT EXTRACT(DOW FROM pickup_datetime) AS dow, COUNT(*) AS trips, AVG(total_amount) AS avg_total
FROM trips
WHERE pickup_location_id IN (255, 256) AND total_amount > 10
GROUP BY 1
ORDER BY dow
