-- schema: trips
-- HAVING and ORDER BY on select-list aliases
SELECT payment_type, COUNT(*) AS n FROM trips GROUP BY payment_type HAVING n > 10 ORDER BY n DESC;
SELECT payment_type AS p, COUNT(*) AS n, SUM(fare_amount) AS s FROM trips GROUP BY p HAVING s > 100 AND n > 10 ORDER BY s DESC, p;
SELECT payment_type, COUNT(*) AS n, AVG(tip_amount) AS a FROM trips GROUP BY payment_type HAVING NOT (a > 1 OR n < 5) ORDER BY a, payment_type;
SELECT vendor_id, MAX(fare_amount) AS m FROM trips WHERE fare_amount > 1e9 GROUP BY vendor_id HAVING m > 0 ORDER BY m;
SELECT COUNT(*) AS n FROM trips HAVING n * 2 > 1;
SELECT payment_type, COUNT(*) AS n FROM trips GROUP BY 1 HAVING n > 50;
-- WITH: a CTE that filters and projects the table, inlined
WITH t AS (SELECT payment_type AS p, fare_amount + tip_amount AS total FROM trips WHERE fare_amount > 10) SELECT p, COUNT(*) AS n, AVG(total) FROM t WHERE total < 50 GROUP BY p HAVING n > 3 ORDER BY p;
WITH t AS (SELECT * FROM trips x WHERE x.tip_amount > 0), u AS (SELECT payment_type, fare_amount AS f FROM t) SELECT payment_type, SUM(f) FROM u AS z GROUP BY z.payment_type ORDER BY 1;
WITH t AS (SELECT * FROM trips) SELECT t.vendor_id, COUNT(*) FROM t GROUP BY t.vendor_id;
WITH t AS (SELECT vendor_id AS v, trip_distance AS d FROM trips WHERE trip_distance < 0) SELECT v, COUNT(*), MIN(d) FROM t GROUP BY v;
WITH trips AS (SELECT * FROM trips WHERE passenger_count > 1) SELECT COUNT(*), SUM(passenger_count) FROM trips;
-- SELECT DISTINCT as a GROUP BY of its columns
SELECT DISTINCT payment_type, vendor_id FROM trips WHERE fare_amount > 50 ORDER BY 1, 2;
SELECT DISTINCT payment_type AS p FROM trips ORDER BY p DESC;
SELECT DISTINCT store_and_fwd_flag FROM trips;
SELECT DISTINCT EXTRACT(HOUR FROM pickup_datetime) AS h, vendor_id FROM trips WHERE trip_distance > 10;
SELECT DISTINCT vendor_id FROM trips WHERE vendor_id < 0;
-- STDDEV and VARIANCE (sample and population), grouped and not (a tiny spread far from 0,
-- where DuckDB's own answer is off by 1e-9 or more, is checked exactly in tests/engine/test_accumulate.py)
SELECT STDDEV(fare_amount), VARIANCE(tip_amount), VAR_POP(passenger_count), STDDEV_POP(trip_distance) FROM trips;
SELECT payment_type, STDDEV(fare_amount) AS s, VAR_SAMP(trip_distance), VAR_POP(total_amount), COUNT(*) FROM trips GROUP BY payment_type ORDER BY s;
SELECT vendor_id, STDDEV_SAMP(passenger_count), STDDEV_POP(pickup_location_id) FROM trips WHERE trip_distance > 30 GROUP BY vendor_id;
SELECT STDDEV(fare_amount), VAR_POP(fare_amount) FROM trips WHERE vendor_id = 99;
SELECT EXTRACT(HOUR FROM pickup_datetime) AS h, STDDEV(tip_amount) AS s FROM trips GROUP BY h HAVING s > 1 ORDER BY h;
-- aggregate FILTER (WHERE ...)
SELECT COUNT(*) FILTER (WHERE tip_amount > 0), SUM(fare_amount) FILTER (WHERE payment_type = 2), COUNT(*) FROM trips;
SELECT vendor_id, COUNT(*) FILTER (WHERE tip_amount > 0) AS n, AVG(tip_amount) FILTER (WHERE tip_amount > 0), STDDEV(tip_amount) FILTER (WHERE tip_amount > 0) FROM trips GROUP BY vendor_id ORDER BY 1;
SELECT payment_type, MIN(fare_amount) FILTER (WHERE trip_distance > 5), MAX(pickup_datetime) FILTER (WHERE store_and_fwd_flag = 'Y') FROM trips GROUP BY payment_type;
SELECT COUNT(*) FILTER (WHERE trip_distance > 1000), SUM(passenger_count) FILTER (WHERE FALSE) FROM trips;
SELECT payment_type, COUNT(*) FILTER (WHERE tip_amount > 0) AS tipped FROM trips GROUP BY payment_type HAVING tipped > 0 ORDER BY tipped DESC;
