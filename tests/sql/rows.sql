-- schema: trips
-- queries that return rows (engine.rows): late materialization, and exact quantiles
SELECT * FROM trips WHERE tip_amount > 50;
SELECT fare_amount, tip_amount, pickup_datetime FROM trips WHERE tip_amount > 30 ORDER BY 1, 2, 3;
SELECT * FROM trips WHERE fare_amount < 0 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18;
SELECT trip_distance, fare_amount FROM trips ORDER BY trip_distance DESC, fare_amount DESC LIMIT 10;
SELECT pickup_location_id, store_and_fwd_flag, total_amount FROM trips WHERE payment_type = 3 ORDER BY total_amount DESC, 1, 2 LIMIT 5 OFFSET 1;
SELECT fare_amount + tip_amount AS paid, EXTRACT(hour FROM pickup_datetime) AS h FROM trips WHERE passenger_count >= 6;
SELECT passenger_count FROM trips WHERE passenger_count > 100;
SELECT MEDIAN(fare_amount), quantile_cont(trip_distance, 0.9), quantile_disc(tip_amount, 0.99) FROM trips;
SELECT payment_type, MEDIAN(fare_amount), AVG(fare_amount), COUNT(*) FROM trips WHERE trip_distance > 1 GROUP BY payment_type ORDER BY payment_type;
SELECT vendor_id, quantile_disc(pickup_datetime, 0.5), quantile_cont(total_amount, 0.25) FROM trips GROUP BY 1 ORDER BY 1;
SELECT fare_amount, tip_amount, pickup_location_id FROM trips ORDER BY fare_amount DESC, tip_amount DESC, pickup_location_id LIMIT 10;
SELECT pickup_datetime, fare_amount FROM trips ORDER BY pickup_datetime, fare_amount LIMIT 7 OFFSET 3;
SELECT trip_distance, passenger_count FROM trips ORDER BY trip_distance DESC, passenger_count LIMIT 25;
SELECT tip_amount, fare_amount FROM trips ORDER BY tip_amount, fare_amount LIMIT 3;
