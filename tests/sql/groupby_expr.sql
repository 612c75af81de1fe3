-- schema: trips
-- GROUP BY beyond the kernel's dense keys (engine.hashagg): expressions, float and timestamp
-- columns, conditions, large domains, GROUP BY ALL; aliases, positions, HAVING, ORDER BY, LIMIT
SELECT trip_distance, COUNT(*) FROM trips GROUP BY trip_distance;
SELECT pickup_datetime, COUNT(*) FROM trips GROUP BY pickup_datetime;
SELECT date_trunc('day', pickup_datetime) AS d, COUNT(*), SUM(fare_amount), AVG(tip_amount) FROM trips GROUP BY d ORDER BY d;
SELECT date_trunc('hour', pickup_datetime) AS h, MIN(fare_amount), MAX(total_amount) FROM trips WHERE payment_type = 1 GROUP BY h ORDER BY h;
SELECT round(CAST(trip_distance AS DOUBLE)) AS r, COUNT(*), STDDEV(fare_amount) FROM trips GROUP BY 1 ORDER BY 1;
SELECT CAST(CAST(trip_distance AS DOUBLE) AS INTEGER) AS r, COUNT(*), VAR_POP(tip_amount) FROM trips GROUP BY r ORDER BY r;
SELECT floor(fare_amount / 10) AS band, COUNT(*), SUM(passenger_count) FROM trips GROUP BY band HAVING COUNT(*) > 2 ORDER BY band;
SELECT pickup_location_id * 1000 + dropoff_location_id AS pd, COUNT(*) FROM trips GROUP BY pd ORDER BY 2 DESC, 1 LIMIT 10;
SELECT year(pickup_datetime), COUNT(*) FROM trips GROUP BY year(pickup_datetime);
SELECT EXTRACT(YEAR FROM pickup_datetime) AS y, COUNT(*) FROM trips GROUP BY y;
SELECT date_trunc('day', pickup_datetime) AS d, COUNT(*) FROM trips GROUP BY d;
SELECT fare_amount, COUNT(*), SUM(tip_amount) FROM trips GROUP BY fare_amount ORDER BY 2 DESC, 1 LIMIT 5;
SELECT tip_amount > 0 AS tipped, COUNT(*), AVG(fare_amount) FROM trips GROUP BY tipped ORDER BY tipped;
SELECT payment_type, floor(tip_amount) AS t, COUNT(*) FROM trips GROUP BY ALL ORDER BY 1, 2;
SELECT vendor_id, COUNT(*) FROM trips GROUP BY ALL;
SELECT DISTINCT trip_distance FROM trips;
SELECT DISTINCT passenger_count, payment_type, trip_distance > 5 FROM trips;
SELECT pickup_location_id, dropoff_location_id, vendor_id, rate_code_id, COUNT(*) FROM trips GROUP BY 1, 2, 3, 4;
SELECT pickup_location_id, dropoff_location_id, vendor_id, rate_code_id, SUM(fare_amount) AS f FROM trips GROUP BY 1, 2, 3, 4 ORDER BY f DESC, 1, 2, 3, 4 LIMIT 7;
SELECT store_and_fwd_flag, date_trunc('month', dropoff_datetime) AS m, COUNT(*), COUNT(tip_amount) FILTER (WHERE tip_amount > 1) FROM trips GROUP BY 1, 2 ORDER BY 1, 2;
SELECT trip_distance, COUNT(*) FROM trips WHERE trip_distance > 1e9 GROUP BY trip_distance;
