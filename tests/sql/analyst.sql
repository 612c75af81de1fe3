-- schema: trips
-- an analyst's notebook over taxi trips: the SQL that runs through the plan tree
-- (derived tables, CTEs, set operations, windows, subqueries, dates, strings, grouping sets)
-- derived tables and CTEs that hold a GROUP BY
SELECT COUNT(*) FROM (SELECT vendor_id FROM trips);
SELECT AVG(n) FROM (SELECT pickup_location_id, COUNT(*) AS n FROM trips GROUP BY 1);
SELECT vendor_id, n FROM (SELECT vendor_id, COUNT(*) AS n FROM trips GROUP BY vendor_id) s WHERE n > 10 ORDER BY vendor_id;
SELECT MAX(fare) FROM (SELECT payment_type, AVG(fare_amount) AS fare FROM trips GROUP BY payment_type);
WITH per_zone AS (SELECT pickup_location_id AS z, COUNT(*) AS n, SUM(total_amount) AS amt FROM trips GROUP BY 1) SELECT COUNT(*), SUM(n), MAX(amt) FROM per_zone;
WITH per_zone AS (SELECT pickup_location_id AS z, COUNT(*) AS n FROM trips GROUP BY 1) SELECT z, n FROM per_zone ORDER BY n DESC, z LIMIT 5;
WITH busy AS (SELECT pickup_location_id FROM trips GROUP BY 1 HAVING COUNT(*) > 50) SELECT COUNT(*) FROM trips WHERE pickup_location_id IN (SELECT pickup_location_id FROM busy);
WITH h AS (SELECT EXTRACT(HOUR FROM pickup_datetime) AS hr, COUNT(*) AS n FROM trips GROUP BY 1) SELECT hr, n, n * 100.0 / (SELECT SUM(n) FROM h) AS pct FROM h ORDER BY hr;
WITH a AS (SELECT vendor_id, COUNT(*) AS n FROM trips GROUP BY 1), b AS (SELECT vendor_id, AVG(fare_amount) AS f FROM trips GROUP BY 1) SELECT a.vendor_id, a.n, b.f FROM a JOIN b ON a.vendor_id = b.vendor_id ORDER BY 1;
SELECT s.payment_type, s.n FROM (SELECT payment_type, COUNT(*) AS n FROM trips WHERE fare_amount > 0 GROUP BY 1) AS s ORDER BY s.n DESC, s.payment_type;
SELECT COUNT(*) FROM (SELECT DISTINCT pickup_location_id, dropoff_location_id FROM trips);
SELECT * FROM (SELECT passenger_count, COUNT(*) AS n FROM trips GROUP BY 1) ORDER BY passenger_count NULLS LAST;
SELECT d, COUNT(*) FROM (SELECT CASE WHEN trip_distance < 1 THEN 'short' WHEN trip_distance < 5 THEN 'medium' ELSE 'long' END AS d FROM trips) GROUP BY d ORDER BY d;
-- set operations
SELECT COUNT(*) FROM trips UNION ALL SELECT COUNT(*) FROM trips WHERE vendor_id = 1;
SELECT vendor_id FROM trips WHERE fare_amount > 40 UNION SELECT vendor_id FROM trips WHERE tip_amount > 10 ORDER BY 1;
SELECT 'card' AS kind, COUNT(*) AS n FROM trips WHERE payment_type = 1 UNION ALL SELECT 'cash', COUNT(*) FROM trips WHERE payment_type = 2 ORDER BY kind;
SELECT kind, SUM(n) FROM (SELECT 'pickup' AS kind, COUNT(*) AS n FROM trips WHERE pickup_location_id = 161 UNION ALL SELECT 'dropoff', COUNT(*) FROM trips WHERE dropoff_location_id = 161) GROUP BY kind ORDER BY kind;
SELECT pickup_location_id FROM trips WHERE fare_amount > 50 INTERSECT SELECT dropoff_location_id FROM trips WHERE fare_amount > 50 ORDER BY 1;
SELECT pickup_location_id FROM trips WHERE vendor_id = 1 EXCEPT SELECT pickup_location_id FROM trips WHERE vendor_id = 2 ORDER BY 1;
SELECT COUNT(*) FROM (SELECT pickup_location_id AS z FROM trips UNION SELECT dropoff_location_id FROM trips);
-- window functions
SELECT payment_type, n, RANK() OVER (ORDER BY n DESC) AS r FROM (SELECT payment_type, COUNT(*) AS n FROM trips GROUP BY 1) ORDER BY r, payment_type;
SELECT vendor_id, payment_type, n, ROW_NUMBER() OVER (PARTITION BY vendor_id ORDER BY n DESC, payment_type) AS rn FROM (SELECT vendor_id, payment_type, COUNT(*) AS n FROM trips GROUP BY 1, 2) ORDER BY vendor_id, rn;
SELECT hr, n, SUM(n) OVER (ORDER BY hr) AS running FROM (SELECT EXTRACT(HOUR FROM pickup_datetime) AS hr, COUNT(*) AS n FROM trips GROUP BY 1) ORDER BY hr;
SELECT payment_type, COUNT(*) AS n, COUNT(*) * 1.0 / SUM(COUNT(*)) OVER () AS share FROM trips GROUP BY payment_type ORDER BY payment_type;
SELECT vendor_id, pickup_location_id, n FROM (SELECT vendor_id, pickup_location_id, COUNT(*) AS n FROM trips GROUP BY 1, 2) QUALIFY ROW_NUMBER() OVER (PARTITION BY vendor_id ORDER BY n DESC, pickup_location_id) <= 3 ORDER BY vendor_id, n DESC, pickup_location_id;
SELECT hr, n, LAG(n) OVER (ORDER BY hr) AS prev, LEAD(n, 2) OVER (ORDER BY hr) AS next2 FROM (SELECT EXTRACT(HOUR FROM pickup_datetime) AS hr, COUNT(*) AS n FROM trips GROUP BY 1) ORDER BY hr;
SELECT passenger_count, n, DENSE_RANK() OVER (ORDER BY n DESC) AS dr FROM (SELECT passenger_count, COUNT(*) AS n FROM trips GROUP BY 1) ORDER BY dr, passenger_count NULLS LAST;
SELECT vendor_id, hr, n, AVG(n) OVER (PARTITION BY vendor_id) AS avg_n FROM (SELECT vendor_id, EXTRACT(HOUR FROM pickup_datetime) AS hr, COUNT(*) AS n FROM trips GROUP BY 1, 2) ORDER BY vendor_id, hr;
SELECT * FROM (SELECT pickup_location_id, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*) DESC) AS r FROM trips GROUP BY 1) WHERE r <= 5 ORDER BY r, pickup_location_id;
SELECT fare_amount, tip_amount, ROW_NUMBER() OVER (ORDER BY fare_amount DESC, tip_amount DESC, pickup_datetime, dropoff_datetime) AS rn FROM trips WHERE fare_amount > 60 ORDER BY rn;
SELECT hr, n, SUM(n) OVER (ORDER BY hr ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS smooth FROM (SELECT EXTRACT(HOUR FROM pickup_datetime) AS hr, COUNT(*) AS n FROM trips GROUP BY 1) ORDER BY hr;
SELECT vendor_id, payment_type, n, n - MIN(n) OVER (PARTITION BY vendor_id) AS above_min, COUNT(*) OVER (PARTITION BY vendor_id) AS kinds FROM (SELECT vendor_id, payment_type, COUNT(*) AS n FROM trips GROUP BY 1, 2) ORDER BY 1, 2;
SELECT payment_type, n, FIRST_VALUE(payment_type) OVER (ORDER BY n DESC, payment_type) AS top FROM (SELECT payment_type, COUNT(*) AS n FROM trips GROUP BY 1) ORDER BY payment_type;
SELECT d, n, NTILE(4) OVER (ORDER BY n, d) AS q FROM (SELECT dropoff_location_id AS d, COUNT(*) AS n FROM trips GROUP BY 1) ORDER BY d;
-- subqueries in expressions
SELECT COUNT(*) FROM trips WHERE fare_amount > (SELECT AVG(fare_amount) FROM trips);
SELECT COUNT(*) FROM trips WHERE vendor_id = (SELECT MAX(vendor_id) FROM trips);
SELECT (SELECT COUNT(*) FROM trips WHERE tip_amount > 0) AS tipped, (SELECT COUNT(*) FROM trips) AS total;
SELECT COUNT(*) FROM trips WHERE vendor_id IN (SELECT vendor_id FROM trips);
SELECT COUNT(*) FROM trips WHERE vendor_id IN (SELECT LocationID FROM zones GROUP BY LocationID);
SELECT COUNT(*) FROM trips WHERE pickup_location_id IN (SELECT pickup_location_id FROM trips GROUP BY 1 ORDER BY COUNT(*) DESC, 1 LIMIT 10);
SELECT COUNT(*) FROM trips WHERE pickup_location_id NOT IN (SELECT LocationID FROM zones WHERE Borough = 'Manhattan');
SELECT COUNT(*) FROM trips WHERE EXISTS (SELECT 1 FROM zones WHERE Borough = 'EWR');
SELECT COUNT(*) FROM trips WHERE NOT EXISTS (SELECT 1 FROM zones WHERE Borough = 'Atlantis');
SELECT payment_type, AVG(fare_amount) - (SELECT AVG(fare_amount) FROM trips) AS vs_all FROM trips GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM trips t WHERE fare_amount > (SELECT AVG(u.fare_amount) FROM trips u WHERE u.payment_type = t.payment_type);
SELECT vendor_id, COUNT(*) FROM trips t WHERE EXISTS (SELECT 1 FROM zones z WHERE z.LocationID = t.pickup_location_id AND z.Borough = 'Queens') GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM trips WHERE vendor_id = (SELECT LocationID FROM zones WHERE LocationID = 1);
-- dates and times
SELECT CAST(pickup_datetime AS DATE) AS day, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1;
SELECT strftime(pickup_datetime, '%Y-%m') AS month, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1;
SELECT AVG(EXTRACT(epoch FROM dropoff_datetime) - EXTRACT(epoch FROM pickup_datetime)) FROM trips;
SELECT AVG(date_diff('minute', pickup_datetime, dropoff_datetime)) FROM trips;
SELECT EXTRACT(HOUR FROM pickup_datetime + INTERVAL 6 HOUR) AS h, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM trips WHERE dropoff_datetime > pickup_datetime + INTERVAL 1 HOUR;
SELECT dayname(pickup_datetime) AS dow, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1;
SELECT EXTRACT(dow FROM pickup_datetime) AS dow, AVG(trip_distance) FROM trips GROUP BY 1 ORDER BY 1;
SELECT date_part('month', pickup_datetime) AS m, SUM(total_amount) FROM trips GROUP BY 1 ORDER BY 1;
SELECT MIN(CAST(pickup_datetime AS DATE)), MAX(CAST(dropoff_datetime AS DATE)) FROM trips;
SELECT COUNT(*) FROM trips WHERE CAST(pickup_datetime AS DATE) = DATE '2019-01-15';
SELECT date_trunc('day', pickup_datetime) AS d, COUNT(*) FROM trips GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5;
SELECT COUNT(*) FROM trips WHERE date_diff('minute', pickup_datetime, dropoff_datetime) > 60;
SELECT strftime(pickup_datetime, '%H:00') AS hr, COUNT(*) FROM trips WHERE payment_type = 1 GROUP BY 1 ORDER BY 1;
SELECT CASE WHEN EXTRACT(dow FROM pickup_datetime) IN (0, 6) THEN 'weekend' ELSE 'weekday' END AS part, COUNT(*), AVG(fare_amount) FROM trips GROUP BY 1 ORDER BY 1;
SELECT MAX(dropoff_datetime - pickup_datetime) > INTERVAL 1 HOUR FROM trips;
-- strings
SELECT upper(store_and_fwd_flag) AS f, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1;
SELECT lower(z.Borough) AS b, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY 1 ORDER BY 1;
SELECT substr(z.Zone, 1, 3) AS p, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 10;
SELECT length(z.Zone) AS len, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY 1 ORDER BY 1;
SELECT z.Borough || ' / ' || z.service_zone AS place, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE regexp_matches(z.Zone, '^(East|West) ');
SELECT regexp_replace(z.Zone, ' .*', '') AS first_word, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5;
SELECT concat(CAST(vendor_id AS VARCHAR), '-', CAST(payment_type AS VARCHAR)) AS k, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1;
SELECT Borough, COUNT(*) FROM zones WHERE Zone LIKE '%Park%' GROUP BY 1 ORDER BY 1;
SELECT trim(Zone) AS z, length(Zone) FROM zones WHERE LocationID < 5 ORDER BY 1;
SELECT CASE payment_type WHEN 1 THEN 'card' WHEN 2 THEN 'cash' ELSE 'other' END AS how, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1;
SELECT CASE WHEN tip_amount > 0 THEN 'tipped' ELSE 'none' END AS t, payment_type, COUNT(*) FROM trips GROUP BY 1, 2 ORDER BY 1, 2;
SELECT left(z.Borough, 1) AS b, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY 1 ORDER BY 1;
-- grouping sets, rollup, cube
SELECT vendor_id, payment_type, COUNT(*) FROM trips GROUP BY ROLLUP (vendor_id, payment_type) ORDER BY 1 NULLS LAST, 2 NULLS LAST;
SELECT vendor_id, payment_type, SUM(fare_amount) FROM trips GROUP BY CUBE (vendor_id, payment_type) ORDER BY 1 NULLS LAST, 2 NULLS LAST;
SELECT vendor_id, passenger_count, COUNT(*) FROM trips GROUP BY GROUPING SETS ((vendor_id), (passenger_count), ()) ORDER BY 1 NULLS LAST, 2 NULLS LAST;
-- several distinct counts, quantile lists, aggregate expressions in ORDER BY
SELECT COUNT(DISTINCT pickup_location_id), COUNT(DISTINCT dropoff_location_id) FROM trips;
SELECT vendor_id, COUNT(DISTINCT pickup_location_id), COUNT(DISTINCT payment_type) FROM trips GROUP BY 1 ORDER BY 1;
SELECT quantile_cont(fare_amount, [0.5, 0.9]) FROM trips;
SELECT payment_type, COUNT(*) FROM trips GROUP BY 1 ORDER BY SUM(fare_amount) / COUNT(*) DESC, 1;
SELECT pickup_location_id, SUM(tip_amount) FROM trips GROUP BY 1 ORDER BY SUM(tip_amount) DESC, 1 LIMIT 5;
SELECT COUNT(z.Zone), COUNT(*) FROM trips t LEFT JOIN zones z ON t.dropoff_location_id = z.LocationID;
-- joins of two fact-sized inputs, joins of derived tables
SELECT a.pickup_location_id, a.n, b.n FROM (SELECT pickup_location_id, COUNT(*) AS n FROM trips GROUP BY 1) a JOIN (SELECT dropoff_location_id, COUNT(*) AS n FROM trips GROUP BY 1) b ON a.pickup_location_id = b.dropoff_location_id ORDER BY a.n + b.n DESC, 1 LIMIT 10;
SELECT COUNT(*) FROM (SELECT pickup_location_id AS z FROM trips GROUP BY 1) a FULL JOIN (SELECT dropoff_location_id AS z FROM trips GROUP BY 1) b ON a.z = b.z WHERE a.z IS NULL OR b.z IS NULL;
SELECT z.Borough, s.n FROM zones z LEFT JOIN (SELECT pickup_location_id, COUNT(*) AS n FROM trips GROUP BY 1) s ON s.pickup_location_id = z.LocationID WHERE z.LocationID <= 5 ORDER BY z.LocationID;
SELECT z.Zone, COALESCE(s.n, 0) AS n FROM zones z LEFT JOIN (SELECT pickup_location_id, COUNT(*) AS n FROM trips GROUP BY 1) s ON s.pickup_location_id = z.LocationID WHERE z.Borough = 'Staten Island' ORDER BY n DESC, z.Zone LIMIT 5;
SELECT pu.Borough AS from_b, dz.Borough AS to_b, COUNT(*) AS n FROM trips t JOIN zones pu ON t.pickup_location_id = pu.LocationID JOIN zones dz ON t.dropoff_location_id = dz.LocationID GROUP BY 1, 2 ORDER BY n DESC, 1, 2 LIMIT 8;
SELECT COUNT(*) FROM zones z WHERE z.LocationID NOT IN (SELECT pickup_location_id FROM trips WHERE pickup_location_id IS NOT NULL);
SELECT z.Borough, COUNT(*) FROM zones z WHERE EXISTS (SELECT 1 FROM trips t WHERE t.dropoff_location_id = z.LocationID) GROUP BY 1 ORDER BY 1;
-- filters, arithmetic and SELECT without FROM
SELECT 1;
SELECT 1 + 2 AS three, 'x' AS s;
SELECT COUNT(*) FILTER (WHERE tip_amount > 0), COUNT(*) FROM trips;
SELECT payment_type, ROUND(AVG(tip_amount / NULLIF(fare_amount, 0)) * 100, 2) AS tip_pct FROM trips WHERE fare_amount > 0 GROUP BY 1 ORDER BY 1;
SELECT vendor_id, ROUND(SUM(total_amount), 2), ROUND(AVG(trip_distance), 3) FROM trips GROUP BY 1 ORDER BY 1;
SELECT COUNT(*), AVG(fare) FROM (SELECT fare_amount + tip_amount AS fare FROM trips WHERE trip_distance > 0) WHERE fare > 20;
SELECT greatest(fare_amount, tip_amount) AS g, least(fare_amount, tip_amount) AS l FROM trips WHERE fare_amount > 70 ORDER BY 1, 2;
SELECT COUNT(*) FROM trips WHERE COALESCE(passenger_count, 0) = 0;
SELECT passenger_count, COUNT(*) FROM trips GROUP BY ALL ORDER BY 1 NULLS FIRST;
SELECT ROUND(trip_distance) AS d, COUNT(*) FROM trips WHERE trip_distance < 5 GROUP BY 1 ORDER BY 1;
SELECT CAST(trip_distance AS INTEGER) AS d, COUNT(*) FROM trips WHERE trip_distance < 4 GROUP BY 1 ORDER BY 1;
SELECT vendor_id, ANY_VALUE(vendor_id * 10), COUNT(*) FROM trips GROUP BY 1 ORDER BY 1;
SELECT payment_type, STDDEV_SAMP(fare_amount) > 0 FROM trips GROUP BY 1 HAVING COUNT(*) > 2 ORDER BY 1;
SELECT DISTINCT payment_type, vendor_id FROM trips ORDER BY 1, 2;
SELECT vendor_id, MAX(fare_amount) - MIN(fare_amount) AS spread FROM trips GROUP BY 1 HAVING MAX(fare_amount) > 10 ORDER BY 1;
SELECT COUNT(*) FROM (SELECT * FROM trips WHERE fare_amount > 10 LIMIT 100);
SELECT vendor_id, fare_amount FROM (SELECT vendor_id, fare_amount, ROW_NUMBER() OVER (PARTITION BY vendor_id ORDER BY fare_amount DESC, pickup_datetime, dropoff_datetime, tip_amount) AS rn FROM trips) WHERE rn = 1 ORDER BY 1;
SELECT hr, AVG(n) FROM (SELECT CAST(pickup_datetime AS DATE) AS d, EXTRACT(HOUR FROM pickup_datetime) AS hr, COUNT(*) AS n FROM trips GROUP BY 1, 2) GROUP BY hr ORDER BY hr;
SELECT n_pass, COUNT(*) FROM (SELECT COALESCE(passenger_count, -1) AS n_pass FROM trips) GROUP BY 1 ORDER BY 1;
SELECT SUM(CASE WHEN payment_type = 1 THEN total_amount ELSE 0 END) / SUM(total_amount) FROM trips;
SELECT vendor_id, SUM(fare_amount) FILTER (WHERE payment_type = 1) AS card, SUM(fare_amount) FILTER (WHERE payment_type = 2) AS cash FROM trips GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM trips WHERE fare_amount BETWEEN 5 AND 10 AND NOT (payment_type = 2 OR passenger_count IS NULL);
SELECT MEDIAN(trip_distance), AVG(trip_distance) FROM (SELECT trip_distance FROM trips WHERE trip_distance > 0);
SELECT payment_type, MEDIAN(fare_amount) FROM (SELECT payment_type, fare_amount FROM trips WHERE vendor_id = 2) GROUP BY 1 ORDER BY 1;
SELECT x, x * 2 FROM (VALUES (1), (2), (3)) v(x) ORDER BY 1;
SELECT COUNT(*) FROM trips t JOIN (VALUES (1, 'card'), (2, 'cash')) p(k, name) ON t.payment_type = p.k WHERE p.name = 'card';
SELECT store_and_fwd_flag, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1 NULLS FIRST;
SELECT pickup_location_id, dropoff_location_id, COUNT(*) AS n FROM trips GROUP BY 1, 2 ORDER BY n DESC, 1, 2 LIMIT 10;
SELECT vendor_id, string_agg(DISTINCT CAST(payment_type AS VARCHAR), ',' ORDER BY CAST(payment_type AS VARCHAR)) FROM trips GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM trips WHERE pickup_location_id = dropoff_location_id;
SELECT AVG(trip_distance) FILTER (WHERE pickup_location_id = dropoff_location_id), AVG(trip_distance) FROM trips;
-- once refused (the fused translator alone), now answered through the plan tree
SELECT COUNT(*) FROM trips WHERE vendor_id IN (SELECT vendor_id FROM trips);
SELECT COUNT(*) FROM (SELECT vendor_id FROM trips);
SELECT COUNT(*) OVER () FROM trips;
SELECT COUNT(*) FROM trips UNION ALL SELECT COUNT(*) FROM trips;
SELECT COUNT(*) FROM trips WHERE 'Y' LIKE 'Y%';
SELECT COUNT(*) FROM trips WHERE vendor_id IN (SELECT LocationID FROM zones GROUP BY LocationID);
SELECT COUNT(*) FROM trips WHERE vendor_id = (SELECT MAX(LocationID) FROM zones);
SELECT COUNT(*) FROM trips WHERE 1 = 1;
SELECT SUM(1) FROM trips;
SELECT MAX(fare_amount > 1) FROM trips;
SELECT COUNT(*) FROM trips WHERE 'Y' = 'Y';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = store_and_fwd_flag || 'x';
SELECT AVG(fare_amount) FROM trips WHERE 'a' IN ('a', 'b');
SELECT AVG(fare_amount) FROM trips WHERE NOT '' IN ('x');
SELECT AVG(fare_amount) FROM trips WHERE '' IS NULL;
SELECT COUNT(*) FROM trips t RIGHT JOIN zones z ON t.pickup_location_id = z.LocationID;
SELECT COUNT(*) FROM trips t FULL OUTER JOIN zones z ON t.pickup_location_id = z.LocationID;
SELECT SUM(z.LocationID) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID;
SELECT COUNT(CASE WHEN vendor_id = 1 THEN NULL END) FROM trips;
SELECT SUM(ROUND(trip_distance * 1.5, 2)) FROM trips;
SELECT SUM(CAST(trip_distance AS DECIMAL(10, 2))) FROM trips;
SELECT SUM(TRY_CAST(trip_distance AS INTEGER)) FROM trips;
SELECT SUM(ROUND(trip_distance, -1)) FROM trips;
SELECT COUNT(*) FROM trips WHERE EXTRACT(EPOCH FROM pickup_datetime) > 0;
WITH t AS (SELECT vendor_id FROM trips GROUP BY vendor_id) SELECT COUNT(*) FROM t;
WITH t AS (SELECT COUNT(*) AS n FROM trips) SELECT SUM(n) FROM t;
WITH t AS (SELECT * FROM trips LIMIT 5) SELECT COUNT(*) FROM t;
SELECT DISTINCT vendor_id, COUNT(*) FROM trips GROUP BY vendor_id;
SELECT DISTINCT * FROM trips;
SELECT COUNT(DISTINCT vendor_id), COUNT(DISTINCT payment_type) FROM trips;
SELECT COUNT(DISTINCT z.Borough) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID;
SELECT trip_distance, COUNT(DISTINCT vendor_id) FROM trips GROUP BY trip_distance;
SELECT 'x', COUNT(*) FROM trips GROUP BY 1;
SELECT z.Borough, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY z.Borough, t.trip_distance;
SELECT COUNT(*) FROM trips t JOIN zones z(a, b) ON t.pickup_location_id = z.a;
-- session 46: top rows per partition (the window keeps only rows that can rank), frames in one pass
SELECT pickup_location_id, fare_amount, trip_distance, ROW_NUMBER() OVER (PARTITION BY pickup_location_id ORDER BY fare_amount DESC, trip_distance DESC, total_amount DESC, tip_amount DESC, pickup_datetime) AS rn FROM trips QUALIFY rn <= 2 ORDER BY pickup_location_id, rn;
SELECT payment_type, n FROM (SELECT payment_type, fare_amount AS n, RANK() OVER (PARTITION BY payment_type ORDER BY fare_amount) AS r FROM trips WHERE fare_amount IS NOT NULL) WHERE r = 1 GROUP BY ALL ORDER BY 1;
SELECT h, n, SUM(n) OVER (ORDER BY h), MAX(n) OVER (ORDER BY h ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), MIN(n) OVER (ORDER BY h ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM (SELECT date_trunc('hour', pickup_datetime) AS h, COUNT(*) AS n FROM trips GROUP BY 1) ORDER BY h;
SELECT t.pickup_location_id, COUNT(*) FROM trips t JOIN (SELECT pickup_location_id, AVG(fare_amount) AS a FROM trips GROUP BY 1) z ON t.pickup_location_id = z.pickup_location_id WHERE t.fare_amount > z.a GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 10;
SELECT pickup_location_id, MEDIAN(fare_amount), quantile_cont(trip_distance, 0.9) FROM trips GROUP BY 1 ORDER BY 1;
-- session 49: DISTINCT inside SUM, AVG and STDDEV (each group's distinct values once), DISTINCT ON (each key's first row in the ORDER BY)
SELECT SUM(DISTINCT passenger_count) FROM trips;
SELECT vendor_id, AVG(DISTINCT fare_amount), SUM(DISTINCT tip_amount), COUNT(DISTINCT payment_type) FROM trips GROUP BY 1 ORDER BY 1;
SELECT payment_type, SUM(DISTINCT passenger_count) FILTER (WHERE fare_amount > 10), STDDEV(DISTINCT passenger_count), MAX(DISTINCT fare_amount) FROM trips GROUP BY ROLLUP (payment_type) ORDER BY 1 NULLS LAST;
SELECT DISTINCT ON (vendor_id) vendor_id FROM trips ORDER BY 1;
SELECT DISTINCT ON (payment_type) payment_type, fare_amount, trip_distance FROM trips WHERE fare_amount IS NOT NULL ORDER BY payment_type, fare_amount DESC, trip_distance DESC, pickup_datetime, tip_amount;
SELECT DISTINCT ON (pickup_location_id) pickup_location_id AS zone, COUNT(*) AS n, payment_type FROM trips GROUP BY pickup_location_id, payment_type ORDER BY zone, n DESC, payment_type LIMIT 20;
-- session 49, a review's findings: * EXCLUDE / REPLACE (the fused kernels refuse them, the tree expands them), DISTINCT ON aliases of any case
SELECT COUNT(*), SUM(fare_amount), SUM(tip_amount) FROM (SELECT * EXCLUDE (store_and_fwd_flag) REPLACE (fare_amount * 2 AS fare_amount) FROM trips);
SELECT vendor_id, COUNT(*), MAX(total_amount) FROM (SELECT * EXCLUDE (fare_amount, pickup_datetime) FROM trips WHERE trip_distance > 5) GROUP BY ALL ORDER BY 1;
SELECT DISTINCT ON (PT) payment_type AS pt, fare_amount FROM trips WHERE fare_amount IS NOT NULL ORDER BY PT, fare_amount DESC;
-- an expression over GROUP BY keys in the select list; IN lists of columns (the plan tree: the fused kernels take neither)
SELECT vendor_id + 1, COUNT(*) FROM trips GROUP BY vendor_id ORDER BY 1;
SELECT payment_type * 10 + vendor_id AS k, AVG(fare_amount), COUNT(*) FROM trips GROUP BY payment_type, vendor_id ORDER BY 1;
SELECT COUNT(*) FROM trips WHERE vendor_id IN (payment_type, 2);
SELECT COUNT(*), SUM(fare_amount) FROM trips WHERE 2 NOT IN (vendor_id, payment_type, passenger_count);
-- constant LIMIT expressions, numbers as conditions, LIKE a column, starts_with(x, NULL), AVG of timestamps,
-- date_trunc by decades and longer, WITH RECURSIVE without recursion, t(a, b) column aliases, * RENAME, DISTINCT ON over *
SELECT vendor_id, COUNT(*) FROM trips GROUP BY vendor_id ORDER BY 2 DESC LIMIT 1 + 1;
SELECT COUNT(*) FROM trips LIMIT 2 * 3 OFFSET 1 - 1;
SELECT COUNT(*) FROM trips WHERE trip_distance;
SELECT COUNT(*), SUM(fare_amount) FROM trips WHERE NOT tip_amount AND passenger_count;
SELECT vendor_id, COUNT(*) FROM trips GROUP BY vendor_id HAVING vendor_id - 1 ORDER BY 1;
SELECT SUM(CASE WHEN tip_amount THEN 1 ELSE 0 END), COUNT(*) FROM trips;
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag LIKE store_and_fwd_flag;
SELECT z.Borough, COUNT(*) FROM zones z JOIN zones w ON z.LocationID = w.LocationID WHERE z.Zone LIKE w.Borough || '%' OR z.Zone ILIKE w.service_zone GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM trips WHERE starts_with(store_and_fwd_flag, NULL);
SELECT COUNT(*) FROM trips WHERE NOT starts_with(store_and_fwd_flag, NULL) OR vendor_id = 1;
SELECT AVG(pickup_datetime) FROM trips;
SELECT vendor_id, AVG(dropoff_datetime), AVG(CAST(pickup_datetime AS DATE)) FROM trips GROUP BY vendor_id ORDER BY 1;
SELECT COUNT(*) FROM trips WHERE date_trunc('millennium', pickup_datetime) > '2000-01-01';
SELECT date_trunc('decade', pickup_datetime) AS d, date_trunc('century', dropoff_datetime) AS c, COUNT(*) FROM trips GROUP BY 1, 2 ORDER BY 1, 2;
WITH RECURSIVE t AS (SELECT * FROM trips) SELECT COUNT(*) FROM t;
SELECT SUM(fare_amount) FROM trips AS t(fare_amount, tip_amount);
SELECT t.fare_amount AS v, COUNT(*), SUM(tip_amount) FROM trips AS t(fare_amount) GROUP BY 1 ORDER BY 1;
WITH c(v, f) AS (SELECT vendor_id, fare_amount FROM trips) SELECT v, SUM(f) FROM c GROUP BY v ORDER BY v;
SELECT x, COUNT(*) FROM (SELECT payment_type, vendor_id FROM trips) AS s(x) WHERE vendor_id = 2 GROUP BY x ORDER BY x;
SELECT * RENAME (fare_amount AS f) FROM trips WHERE total_amount > 200 ORDER BY pickup_datetime, f;
SELECT f, COUNT(*) FROM (SELECT * RENAME (fare_amount AS f) FROM trips) GROUP BY f ORDER BY 2 DESC, 1 LIMIT 5;
SELECT DISTINCT ON (vendor_id) *, fare_amount AS f FROM trips ORDER BY 1, 2, 3, f;
SELECT DISTINCT ON (1) * FROM trips ORDER BY 1, pickup_datetime, dropoff_datetime, fare_amount, trip_distance;
-- joins of the stored trips with zones on OR, inequalities, AND of two keys and a DOUBLE key (the plan tree's join)
SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID OR t.dropoff_location_id = z.LocationID;
SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id > z.LocationID;
SELECT COUNT(*) FROM trips t JOIN zones z ON t.trip_distance = z.LocationID;
SELECT z.Borough, COUNT(*), SUM(t.fare_amount) FROM trips t LEFT JOIN zones z ON t.trip_distance = z.LocationID GROUP BY 1 ORDER BY 1 NULLS FIRST;
SELECT z.Borough, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID AND t.dropoff_location_id = z.LocationID GROUP BY 1 ORDER BY 1;
-- a correlated IN (subquery) that filters rows: as EXISTS with the IN's equality
SELECT COUNT(*) FROM trips WHERE vendor_id IN (SELECT LocationID FROM zones WHERE LocationID = trips.vendor_id);
SELECT COUNT(*) FROM trips t WHERE t.dropoff_location_id IN (SELECT LocationID FROM zones z WHERE z.LocationID = t.pickup_location_id);
SELECT payment_type, COUNT(*) FROM trips t WHERE t.pickup_location_id IN (SELECT LocationID FROM zones z WHERE z.Borough = 'Manhattan' AND z.LocationID = t.dropoff_location_id) AND t.fare_amount > 0 GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM trips t WHERE t.pickup_location_id IN (SELECT LocationID + 0 FROM zones z WHERE z.Borough = 'Queens');
-- WITH RECURSIVE: a series to fill the gaps of a GROUP BY, a running product
WITH RECURSIVE hours(h) AS (SELECT 0 UNION ALL SELECT h + 1 FROM hours WHERE h < 23) SELECT hours.h, COUNT(t.pickup_datetime) AS trips FROM hours LEFT JOIN trips t ON EXTRACT(hour FROM t.pickup_datetime) = hours.h GROUP BY 1 ORDER BY 1;
WITH RECURSIVE p(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM p WHERE n < 6) SELECT p.n, COUNT(*) AS trips FROM p JOIN trips t ON t.passenger_count = p.n GROUP BY 1 ORDER BY 1;
WITH RECURSIVE t AS (SELECT 1 AS x UNION SELECT x % 5 + 1 FROM t) SELECT SUM(x), COUNT(*) FROM t;
-- IS [NOT] DISTINCT FROM over the real NULLs; a number as a condition; LIMIT of a computed constant
SELECT COUNT(*) FROM trips WHERE congestion_surcharge IS DISTINCT FROM 0;
SELECT payment_type, COUNT(*) FROM trips WHERE passenger_count IS NOT DISTINCT FROM NULL OR 0 GROUP BY 1 ORDER BY 1;
SELECT vendor_id, COUNT(*) FROM trips WHERE 1 GROUP BY 1 HAVING COUNT(*) - 1 ORDER BY 1 LIMIT 5 / 2;
