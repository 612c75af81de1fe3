-- analyst: the ten busiest pickup zones of fares over $10, ranked (a derived table, a window)
SELECT pickup_location_id, n, RANK() OVER (ORDER BY n DESC) AS r FROM (SELECT pickup_location_id, COUNT(*) AS n FROM trips WHERE fare_amount > 10 GROUP BY 1) ORDER BY r, pickup_location_id LIMIT 10
