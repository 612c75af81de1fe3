-- schema: trips
-- timestamp literals (TIMESTAMP, DATE, CAST, plain strings), EXTRACT in filters and selects
SELECT COUNT(*) FROM trips WHERE pickup_datetime >= TIMESTAMP '2019-01-15';
SELECT COUNT(*) FROM trips WHERE pickup_datetime < TIMESTAMP '2019-01-15 12:30:00';
SELECT COUNT(*) FROM trips WHERE pickup_datetime > TIMESTAMP '2019-02-01 00:00:00';
SELECT COUNT(*) FROM trips WHERE pickup_datetime <= TIMESTAMP '2019-01-01 00:00:00';
SELECT COUNT(*) FROM trips WHERE pickup_datetime = TIMESTAMP '2019-01-05 06:36:51';
SELECT COUNT(*) FROM trips WHERE pickup_datetime <> TIMESTAMP '2019-01-05 06:36:51';
SELECT COUNT(*) FROM trips WHERE pickup_datetime >= DATE '2019-06-01';
SELECT COUNT(*) FROM trips WHERE pickup_datetime < CAST('2019-02-10' AS TIMESTAMP);
SELECT COUNT(*) FROM trips WHERE pickup_datetime >= '2019-01-20';
SELECT COUNT(*) FROM trips WHERE pickup_datetime < '2019-01-20 08:00:00';
SELECT COUNT(*) FROM trips WHERE TIMESTAMP '2019-03-01' <= pickup_datetime;
SELECT COUNT(*) FROM trips WHERE pickup_datetime < TIMESTAMP '1970-01-01';
SELECT COUNT(*) FROM trips WHERE pickup_datetime > TIMESTAMP '2030-01-01';
SELECT COUNT(*) FROM trips WHERE pickup_datetime > TIMESTAMP '1950-06-01';
SELECT COUNT(*) FROM trips WHERE pickup_datetime IN (TIMESTAMP '2019-01-05 06:36:51', TIMESTAMP '2019-01-23 15:22:13');
SELECT COUNT(*) FROM trips WHERE pickup_datetime IN ('2019-01-04 10:54:47');
SELECT COUNT(*), AVG(trip_distance), MIN(pickup_datetime), MAX(dropoff_datetime) FROM trips WHERE pickup_datetime BETWEEN TIMESTAMP '2019-03-01 00:00:00' AND TIMESTAMP '2019-03-01 23:59:59';
SELECT COUNT(*), MIN(pickup_datetime), MAX(pickup_datetime) FROM trips WHERE pickup_datetime BETWEEN TIMESTAMP '2019-01-10 10:00:00' AND TIMESTAMP '2019-01-10 11:00:00';
SELECT COUNT(*) FROM trips WHERE dropoff_datetime > TIMESTAMP '2019-01-31 23:00:00' AND pickup_datetime < TIMESTAMP '2019-02-01';
SELECT COUNT(*) FROM trips WHERE EXTRACT(HOUR FROM pickup_datetime) = 8;
SELECT COUNT(*) FROM trips WHERE EXTRACT(HOUR FROM pickup_datetime) BETWEEN 7 AND 9;
SELECT COUNT(*) FROM trips WHERE EXTRACT(HOUR FROM pickup_datetime) IN (0, 23);
SELECT COUNT(*) FROM trips WHERE EXTRACT(MINUTE FROM pickup_datetime) < 15;
SELECT COUNT(*) FROM trips WHERE EXTRACT(DOW FROM pickup_datetime) = 0;
SELECT COUNT(*) FROM trips WHERE EXTRACT(DOW FROM pickup_datetime) IN (0, 6);
SELECT COUNT(*) FROM trips WHERE EXTRACT(DOW FROM pickup_datetime) NOT IN (0, 6) AND EXTRACT(HOUR FROM pickup_datetime) >= 17;
SELECT COUNT(*) FROM trips WHERE EXTRACT(HOUR FROM dropoff_datetime) < EXTRACT(HOUR FROM pickup_datetime);
SELECT AVG(EXTRACT(HOUR FROM pickup_datetime)), SUM(EXTRACT(MINUTE FROM pickup_datetime)) FROM trips;
SELECT MIN(EXTRACT(DOW FROM pickup_datetime)), MAX(EXTRACT(DOW FROM pickup_datetime)) FROM trips;
SELECT COUNT(*) FROM trips WHERE hour(pickup_datetime) = 12;
SELECT COUNT(*) FROM trips WHERE minute(dropoff_datetime) = 59;
SELECT COUNT(*) FROM trips WHERE dayofweek(pickup_datetime) = 3;
SELECT MIN(pickup_datetime), MAX(pickup_datetime) FROM trips WHERE EXTRACT(HOUR FROM pickup_datetime) = 3;
SELECT MIN(dropoff_datetime) FROM trips WHERE dropoff_datetime > TIMESTAMP '2019-01-31';
SELECT COUNT(dropoff_datetime), COUNT(pickup_datetime) FROM trips WHERE pickup_datetime >= TIMESTAMP '2019-12-31 12:00:00';
SELECT EXTRACT(HOUR FROM pickup_datetime) AS h, MIN(pickup_datetime), MAX(pickup_datetime) FROM trips WHERE pickup_datetime < TIMESTAMP '2019-01-02' GROUP BY 1 ORDER BY h
