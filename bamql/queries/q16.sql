-- negations: non-standard rates, excluding no-charge and disputes
SELECT rate_code_id, COUNT(*) AS trips, AVG(fare_amount) AS avg_fare
FROM trips
WHERE rate_code_id <> 1 AND payment_type NOT IN (3, 4) AND NOT (trip_distance < 0.5)
GROUP BY rate_code_id
ORDER BY rate_code_id
