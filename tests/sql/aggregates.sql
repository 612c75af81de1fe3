-- schema: trips
-- every aggregate over every column kind, with and without a filter
SELECT COUNT(*) FROM trips;
SELECT COUNT(vendor_id), COUNT(trip_distance), COUNT(pickup_datetime), COUNT(store_and_fwd_flag) FROM trips;
SELECT SUM(vendor_id), SUM(passenger_count), SUM(pickup_location_id), SUM(payment_type) FROM trips;
SELECT SUM(trip_distance), SUM(fare_amount), SUM(extra), SUM(mta_tax) FROM trips;
SELECT SUM(tip_amount), SUM(tolls_amount), SUM(improvement_surcharge), SUM(total_amount) FROM trips;
SELECT AVG(vendor_id), AVG(passenger_count), AVG(rate_code_id), AVG(dropoff_location_id) FROM trips;
SELECT AVG(trip_distance), AVG(fare_amount), AVG(extra), AVG(mta_tax), AVG(tip_amount), AVG(tolls_amount) FROM trips;
SELECT MIN(vendor_id), MAX(vendor_id), MIN(passenger_count), MAX(passenger_count) FROM trips;
SELECT MIN(rate_code_id), MAX(rate_code_id), MIN(payment_type), MAX(payment_type) FROM trips;
SELECT MIN(pickup_location_id), MAX(pickup_location_id), MIN(dropoff_location_id), MAX(dropoff_location_id) FROM trips;
SELECT MIN(trip_distance), MAX(trip_distance), MIN(fare_amount), MAX(fare_amount) FROM trips;
SELECT MIN(extra), MAX(extra), MIN(mta_tax), MAX(mta_tax), MIN(tip_amount), MAX(tip_amount) FROM trips;
SELECT MIN(tolls_amount), MAX(tolls_amount), MIN(total_amount), MAX(total_amount) FROM trips;
SELECT MIN(improvement_surcharge), MAX(improvement_surcharge) FROM trips;
SELECT MIN(pickup_datetime), MAX(pickup_datetime), MIN(dropoff_datetime), MAX(dropoff_datetime) FROM trips;
SELECT MIN(store_and_fwd_flag), MAX(store_and_fwd_flag) FROM trips;
SELECT MIN(store_and_fwd_flag), MAX(store_and_fwd_flag), COUNT(*) FROM trips WHERE vendor_id = 2;
SELECT COUNT(*), SUM(fare_amount), AVG(fare_amount), MIN(fare_amount), MAX(fare_amount) FROM trips WHERE pickup_location_id IN (255, 256);
SELECT COUNT(*), SUM(fare_amount), AVG(fare_amount), MIN(fare_amount), MAX(fare_amount) FROM trips WHERE pickup_location_id = -5;
SELECT COUNT(*), SUM(passenger_count), AVG(passenger_count), MIN(pickup_datetime), MAX(store_and_fwd_flag) FROM trips WHERE FALSE;
SELECT COUNT(*), COUNT(*), SUM(fare_amount), SUM(fare_amount) FROM trips;
SELECT AVG(trip_distance), AVG(total_amount), AVG(extra), AVG(fare_amount), AVG(tolls_amount), AVG(mta_tax) FROM trips WHERE pickup_location_id IN (255, 256);
SELECT AVG(trip_distance), AVG(total_amount), AVG(extra), AVG(fare_amount), AVG(tolls_amount), AVG(mta_tax), AVG(tip_amount), AVG(improvement_surcharge), AVG(congestion_surcharge) FROM trips WHERE pickup_location_id IN (255, 256);
SELECT SUM(fare_amount) AS s, AVG(fare_amount) AS a, COUNT(*) AS n FROM trips WHERE payment_type = 2;
SELECT MAX(total_amount) FROM trips WHERE total_amount < 0;
SELECT MIN(total_amount) FROM trips WHERE total_amount > 0;
SELECT MAX(pickup_datetime) FROM trips WHERE pickup_location_id IN (255, 256);
SELECT MIN(dropoff_datetime) FROM trips WHERE trip_distance > 20;
SELECT COUNT(*), MIN(passenger_count), MAX(passenger_count) FROM trips WHERE passenger_count > 6;
SELECT SUM(trip_distance), COUNT(trip_distance) FROM trips WHERE trip_distance > 0 AND trip_distance < 0.1;
SELECT MIN(fare_amount + tip_amount), MAX(fare_amount + tip_amount) FROM trips;
SELECT MIN(pickup_location_id + dropoff_location_id), MAX(pickup_location_id * 2) FROM trips
