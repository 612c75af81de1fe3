-- tip share of the fare by hour of day, card payments only
SELECT EXTRACT(HOUR FROM pickup_datetime) AS hour, AVG(tip_amount / fare_amount) AS tip_share, COUNT(*) AS trips
FROM trips
WHERE payment_type = 1 AND fare_amount > 0
GROUP BY 1
ORDER BY hour
