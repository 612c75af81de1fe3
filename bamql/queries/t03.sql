-- taxi benchmark 3: trips by passenger count and year
SELECT passenger_count, extract(year FROM pickup_datetime) AS year, count(*) FROM trips GROUP BY passenger_count, year
