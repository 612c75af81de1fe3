-- high selectivity, arithmetic inside aggregates
SELECT SUM(fare_amount + tip_amount + tolls_amount) AS paid, MIN(fare_amount) AS min_fare, MAX(total_amount) AS max_total, AVG(total_amount - fare_amount) AS extras
FROM trips
WHERE fare_amount > 0
