-- schema: trips
-- the BaM taxi queries and relatives: one to nine dependent columns at low selectivity
SELECT AVG(trip_distance) FROM trips WHERE pickup_location_id IN (255, 256);
SELECT AVG(trip_distance), AVG(total_amount) FROM trips WHERE pickup_location_id IN (255, 256);
SELECT AVG(trip_distance), AVG(total_amount), AVG(extra) FROM trips WHERE pickup_location_id IN (255, 256);
SELECT AVG(trip_distance), AVG(total_amount), AVG(extra), AVG(fare_amount) FROM trips WHERE pickup_location_id IN (255, 256);
SELECT AVG(trip_distance), AVG(total_amount), AVG(extra), AVG(fare_amount), AVG(tolls_amount) FROM trips WHERE pickup_location_id IN (255, 256);
SELECT SUM(trip_distance), SUM(total_amount), MIN(extra), MAX(fare_amount), COUNT(tolls_amount), AVG(mta_tax) FROM trips WHERE pickup_location_id = 255;
SELECT AVG(trip_distance), MAX(pickup_datetime), MIN(dropoff_datetime), MAX(store_and_fwd_flag), SUM(passenger_count) FROM trips WHERE pickup_location_id IN (255, 256);
SELECT COUNT(*), AVG(fare_amount + tip_amount), MAX(trip_distance) FROM trips WHERE passenger_count >= 2 AND trip_distance BETWEEN 1 AND 5 AND payment_type = 1;
SELECT COUNT(*), SUM(total_amount), AVG(tolls_amount) FROM trips WHERE pickup_location_id = 132 OR dropoff_location_id = 132;
SELECT SUM(fare_amount + tip_amount + tolls_amount), MIN(fare_amount), MAX(total_amount), AVG(total_amount - fare_amount) FROM trips WHERE fare_amount > 0;
SELECT COUNT(*), COUNT(congestion_surcharge), AVG(congestion_surcharge), SUM(congestion_surcharge) FROM trips WHERE congestion_surcharge IS NULL OR congestion_surcharge > 0;
SELECT AVG(trip_distance) FROM trips WHERE pickup_location_id IN (255, 256) AND dropoff_location_id IN (255, 256);
SELECT AVG(trip_distance) FROM trips WHERE pickup_location_id IN (255, 256) OR dropoff_location_id IN (255, 256);
SELECT dropoff_location_id, AVG(total_amount), COUNT(*) FROM trips WHERE pickup_location_id IN (255, 256) GROUP BY 1 ORDER BY 1;
SELECT AVG(tip_amount), AVG(improvement_surcharge), AVG(congestion_surcharge), AVG(passenger_count), AVG(rate_code_id), AVG(payment_type), AVG(vendor_id) FROM trips WHERE pickup_location_id = 256
