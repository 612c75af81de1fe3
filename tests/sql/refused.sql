-- schema: trips
-- queries bamql must refuse with one line from bamql.errors (never a traceback, never an answer)
SELECT COUNT(*) FROM trips LIMIT -1;
SELECT COUNT(*) FROM trips LIMIT 1 + 1;
SELECT vendor_id, COUNT(*) FROM trips GROUP BY 3;
SELECT vendor_id, COUNT(*) FROM trips GROUP BY vendor_id ORDER BY 5;
SELECT vendor_id, COUNT(*) FROM trips GROUP BY vendor_id ORDER BY passenger_count;
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag LIKE 'Y!' ESCAPE '!';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag LIKE 'Y' ESCAPE '!!';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag LIKE store_and_fwd_flag;
SELECT COUNT(*) FROM trips WHERE vendor_id LIKE '1%';
SELECT COUNT(*) FROM trips WHERE starts_with(store_and_fwd_flag, NULL);
SELECT COUNT(*) FROM trips WHERE vendor_id IN (SELECT LocationID FROM zones WHERE LocationID = trips.vendor_id);
SELECT COUNT(*) FROM trips WHERE vendor_id IN (SELECT LocationID, Zone FROM zones);
SHOW ALL TABLES;
DESCRIBE nothing_here;
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = 1;
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = payment_type;
SELECT COUNT(*) FROM trips WHERE vendor_id = 'one';
SELECT COUNT(*) FROM trips WHERE pickup_datetime > 5;
SELECT COUNT(*) FROM trips WHERE pickup_datetime > 'yesterday';
SELECT COUNT(*) FROM trips WHERE pickup_datetime + 1 > TIMESTAMP '2019-01-01';
SELECT COUNT(*) FROM trips WHERE EXTRACT(HOUR FROM trip_distance) = 1;
SELECT COUNT(*) FROM trips WHERE trip_distance;
SELECT COUNT(*) FROM trips WHERE fare_amount IS 5;
SELECT SUM(store_and_fwd_flag) FROM trips;
SELECT AVG(pickup_datetime) FROM trips;
SELECT SUM(SUM(fare_amount)) FROM trips;
SELECT SUM(fare_amount) FROM trips WHERE SUM(fare_amount) > 1;
SELECT vendor_id, COUNT(*) FROM trips GROUP BY vendor_id HAVING vendor_id;
SELECT COUNT(*) FROM nope;
SELECT COUNT(nope) FROM trips;
SELECT COUNT(*) FROM trips WHERE trip_distnce > 1;
SELECT COUNT(*) FROM trips WHERE other.vendor_id = 1;
SELECT COUNT(* FROM trips;
INSERT INTO trips VALUES (1);
SELECT COUNT(*) FROM trips WHERE pickup_datetime > TIMESTAMP 'not a time';
-- select-list aliases inside a HAVING comparison (DuckDB resolves them; bamql refuses)
SELECT AVG(fare_amount) FROM trips WHERE '' IN;
;
SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID OR t.dropoff_location_id = z.LocationID;
SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id > z.LocationID;
SELECT COUNT(*) FROM trips t JOIN zones z ON t.trip_distance = z.LocationID;
SELECT z.Zone, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY z.Borough;
SELECT COUNT(*) FROM zones
SELECT SUM(CASE WHEN vendor_id = 1 THEN 'a' ELSE 'b' END) FROM trips;
SELECT SUM(CAST(passenger_count AS VARCHAR)) FROM trips;
SELECT SUM(ROUND(trip_distance, passenger_count)) FROM trips;
SELECT COUNT(*) FROM trips WHERE date_trunc('millennium', pickup_datetime) > '2000-01-01';
SELECT SUM(ABS(store_and_fwd_flag)) FROM trips;
WITH t AS (SELECT vendor_id AS v FROM trips) SELECT COUNT(fare_amount) FROM t;
WITH RECURSIVE t AS (SELECT * FROM trips) SELECT COUNT(*) FROM t;
SELECT STDDEV(store_and_fwd_flag) FROM trips;
SELECT VARIANCE(pickup_datetime) FROM trips;
SELECT COUNT(*) FILTER (WHERE SUM(fare_amount) > 1) FROM trips;
SELECT COUNT(*) FROM trips WHERE STDDEV(fare_amount) > 1;
SELECT COUNT(DISTINCT vendor_id, payment_type) FROM trips;
;
;
-- t(a, b) renames columns by position (DuckDB): refused rather than ignored
SELECT SUM(fare_amount) FROM trips AS t(fare_amount, tip_amount);
-- DISTINCT ON by position over SELECT * (the tree names no position past a star), * RENAME
SELECT DISTINCT ON (vendor_id) *, fare_amount AS f FROM trips ORDER BY 1, 2;
SELECT * RENAME (fare_amount AS f) FROM trips;
