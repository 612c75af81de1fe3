-- trips and revenue by payment type in one month
SELECT payment_type, COUNT(*) AS trips, SUM(total_amount) AS revenue
FROM trips
WHERE pickup_datetime >= TIMESTAMP '2019-03-01' AND pickup_datetime < TIMESTAMP '2019-04-01'
GROUP BY payment_type
ORDER BY payment_type
