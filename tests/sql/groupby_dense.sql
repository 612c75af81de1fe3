-- schema: trips
-- GROUP BY keys with a dense range (planner.domains), which the fused kernel groups by:
-- the four taxi-benchmark queries, calendar fields, rounded decimals, integer arithmetic
SELECT vendor_id, count(*) FROM trips GROUP BY vendor_id;
SELECT passenger_count, avg(total_amount) FROM trips GROUP BY passenger_count;
SELECT passenger_count, extract(year FROM pickup_datetime) AS year, count(*) FROM trips GROUP BY passenger_count, year;
SELECT passenger_count, extract(year FROM pickup_datetime) AS year, round(trip_distance) AS distance, count(*) AS trips FROM trips GROUP BY passenger_count, year, distance ORDER BY year, trips DESC, passenger_count, distance;
SELECT round(fare_amount) AS f, count(*), sum(tip_amount), min(trip_distance), max(total_amount) FROM trips GROUP BY f ORDER BY f;
SELECT floor(tip_amount) AS t, ceil(trip_distance) AS d, count(*) FROM trips WHERE payment_type = 1 GROUP BY 1, 2 ORDER BY 1, 2;
SELECT CAST(fare_amount AS INTEGER) AS f, count(*), avg(tip_amount) FROM trips GROUP BY f ORDER BY f;
SELECT CAST(trip_distance AS BIGINT) + passenger_count AS k, count(*) FROM trips GROUP BY k ORDER BY k;
SELECT extract(isoyear FROM dropoff_datetime) AS y, extract(month FROM dropoff_datetime) AS m, count(*) FROM trips GROUP BY 1, 2 ORDER BY 1, 2;
SELECT abs(pickup_location_id - dropoff_location_id) AS gap, count(*) FROM trips GROUP BY gap ORDER BY gap;
SELECT pickup_location_id, dropoff_location_id, count(*), avg(fare_amount) FROM trips GROUP BY 1, 2;
SELECT vendor_id, count(*), sum(passenger_count), min(fare_amount), max(tip_amount), avg(trip_distance), stddev(fare_amount) FROM trips GROUP BY vendor_id ORDER BY vendor_id;
SELECT payment_type, count(*) FILTER (WHERE tip_amount > 0), count(tip_amount), sum(fare_amount) FROM trips GROUP BY payment_type ORDER BY 1;
SELECT round(trip_distance) AS d, count(*) FROM trips WHERE trip_distance > 1e6 GROUP BY d;
SELECT round(fare_amount, 1) AS f, count(*) FROM trips WHERE fare_amount BETWEEN 5 AND 6 GROUP BY f ORDER BY f;
SELECT extract(year FROM pickup_datetime) AS y, median(fare_amount), quantile_cont(tip_amount, 0.9) FROM trips GROUP BY y ORDER BY y;
SELECT extract(year FROM pickup_datetime) AS y, count(DISTINCT payment_type), count(*) FROM trips GROUP BY y ORDER BY y;
SELECT SUM(ROUND(fare_amount, 1)), SUM(CAST(fare_amount AS INTEGER)), SUM(ROUND(trip_distance)) FROM trips;
SELECT date_trunc('hour', pickup_datetime) AS h, count(*), avg(fare_amount), max(tip_amount) FROM trips GROUP BY h ORDER BY h;
SELECT date_trunc('day', pickup_datetime) AS d, payment_type, count(*), sum(total_amount) FROM trips GROUP BY 1, 2 ORDER BY 1, 2;
SELECT date_trunc('week', dropoff_datetime) AS w, count(*) FROM trips GROUP BY w ORDER BY w;
SELECT date_trunc('month', pickup_datetime) AS m, date_trunc('quarter', pickup_datetime) AS q, date_trunc('year', pickup_datetime) AS y, count(*) FROM trips GROUP BY ALL ORDER BY 1;
SELECT date_trunc('minute', pickup_datetime) AS m, count(*) FROM trips WHERE pickup_location_id = 161 GROUP BY m ORDER BY 2 DESC, 1 LIMIT 5;
SELECT tip_amount > 0 AS tipped, fare_amount > 10 AND payment_type = 1 AS big_card, count(*), avg(tip_amount) FROM trips GROUP BY 1, 2 ORDER BY 1, 2;
SELECT date_trunc('day', pickup_datetime) AS d, median(trip_distance) FROM trips GROUP BY d ORDER BY d;
