-- schema: trips
-- scalar functions on taxi trips: conditional sums, calendar fields, rounding over aggregates
SELECT SUM(CASE WHEN payment_type = 1 THEN tip_amount ELSE 0 END), SUM(CASE WHEN payment_type = 2 THEN 1 ELSE 0 END) FROM trips;
SELECT passenger_count, ROUND(AVG(trip_distance), 2), COALESCE(SUM(CASE WHEN trip_distance > 10 THEN 1 END), 0) FROM trips GROUP BY passenger_count ORDER BY passenger_count;
SELECT EXTRACT(MONTH FROM pickup_datetime) AS mo, COUNT(*), ROUND(AVG(fare_amount), 2) FROM trips GROUP BY mo ORDER BY mo;
SELECT EXTRACT(DAY FROM pickup_datetime) AS d, COUNT(*) FROM trips GROUP BY d ORDER BY d;
SELECT COUNT(*) FROM trips WHERE EXTRACT(YEAR FROM pickup_datetime) = 2019 AND EXTRACT(MONTH FROM pickup_datetime) = 1;
SELECT COUNT(*) FROM trips WHERE date_trunc('day', dropoff_datetime) > date_trunc('day', pickup_datetime);
SELECT MIN(date_trunc('week', pickup_datetime)), MAX(date_trunc('month', pickup_datetime)) FROM trips;
SELECT COUNT(*) FROM trips WHERE ABS(total_amount - fare_amount - tip_amount) > 5;
SELECT SUM(FLOOR(trip_distance)), SUM(CEIL(trip_distance)), SUM(CAST(passenger_count AS DOUBLE)) FROM trips;
SELECT vendor_id, CAST(AVG(passenger_count) AS BIGINT), ROUND(SUM(CAST(fare_amount AS DOUBLE)) / COUNT(*), 3) FROM trips GROUP BY vendor_id ORDER BY vendor_id;
SELECT COUNT(*) FROM trips WHERE NULLIF(passenger_count, 0) IS NULL;
SELECT EXTRACT(DOW FROM pickup_datetime) AS dw, SUM(CASE WHEN EXTRACT(HOUR FROM pickup_datetime) BETWEEN 7 AND 9 THEN 1 ELSE 0 END) FROM trips GROUP BY dw ORDER BY dw
