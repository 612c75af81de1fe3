-- taxi benchmark 4: trips by passenger count, year and rounded distance, busiest first
-- (ties broken by the keys, so that every engine's order is one)
SELECT passenger_count, extract(year FROM pickup_datetime) AS year, round(trip_distance) AS distance, count(*) AS trips FROM trips GROUP BY passenger_count, year, distance ORDER BY year, trips DESC, passenger_count, distance
