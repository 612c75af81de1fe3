-- taxi benchmark 2: average total by passenger count
SELECT passenger_count, avg(total_amount) FROM trips GROUP BY passenger_count
