-- schema: trips
-- AND / OR / NOT, nesting, constant conditions
SELECT COUNT(*) FROM trips WHERE vendor_id = 1 AND passenger_count = 1;
SELECT COUNT(*) FROM trips WHERE vendor_id = 1 OR passenger_count = 1;
SELECT COUNT(*) FROM trips WHERE NOT vendor_id = 1;
SELECT COUNT(*) FROM trips WHERE NOT (vendor_id = 1);
SELECT COUNT(*) FROM trips WHERE NOT (vendor_id = 1 AND payment_type = 1);
SELECT COUNT(*) FROM trips WHERE NOT (vendor_id = 1 OR payment_type = 1);
SELECT COUNT(*) FROM trips WHERE NOT NOT (payment_type = 2);
SELECT AVG(trip_distance) FROM trips WHERE (pickup_location_id = 255 OR pickup_location_id = 256) AND fare_amount > 10;
SELECT AVG(trip_distance) FROM trips WHERE pickup_location_id = 255 OR pickup_location_id = 256 AND fare_amount > 10;
SELECT SUM(total_amount) FROM trips WHERE payment_type = 1 AND tip_amount > 0 AND trip_distance > 2 AND passenger_count < 3;
SELECT SUM(total_amount) FROM trips WHERE payment_type = 3 OR payment_type = 4 OR fare_amount < 0 OR total_amount < 0;
SELECT COUNT(*), AVG(tip_amount) FROM trips WHERE (vendor_id = 1 AND trip_distance > 5) OR (vendor_id = 2 AND trip_distance < 1);
SELECT COUNT(*), AVG(tip_amount) FROM trips WHERE (vendor_id = 1 OR trip_distance > 5) AND (vendor_id = 2 OR trip_distance < 1);
SELECT COUNT(*) FROM trips WHERE NOT (trip_distance > 1 AND NOT (fare_amount > 10));
SELECT COUNT(*) FROM trips WHERE ((((passenger_count = 2))));
SELECT COUNT(*) FROM trips WHERE TRUE;
SELECT COUNT(*) FROM trips WHERE FALSE;
SELECT COUNT(*) FROM trips WHERE NOT FALSE;
SELECT COUNT(*) FROM trips WHERE TRUE AND passenger_count = 1;
SELECT COUNT(*) FROM trips WHERE FALSE OR passenger_count = 1;
SELECT COUNT(*) FROM trips WHERE payment_type = 1 AND payment_type = 2;
SELECT COUNT(*) FROM trips WHERE payment_type = 1 OR payment_type <> 1;
SELECT COUNT(*) FROM trips WHERE trip_distance > 3 AND trip_distance < 2;
SELECT COUNT(*), MIN(fare_amount) FROM trips WHERE fare_amount > 5 AND fare_amount > 7 AND fare_amount > 9;
SELECT COUNT(*), MAX(fare_amount) FROM trips WHERE fare_amount < 5 OR fare_amount < 7 OR fare_amount < 9;
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = 'Y' AND vendor_id = 1;
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = 'Y' OR congestion_surcharge IS NULL;
SELECT COUNT(*) FROM trips WHERE NOT (congestion_surcharge IS NULL) AND congestion_surcharge = 0;
SELECT COUNT(*) FROM trips WHERE NOT (congestion_surcharge > 0);
SELECT COUNT(*) FROM trips WHERE NOT (congestion_surcharge > 0) OR congestion_surcharge IS NULL;
SELECT COUNT(*), SUM(fare_amount) FROM trips WHERE (payment_type = 1 AND (tip_amount > 2 OR (tip_amount > 1 AND trip_distance < 1))) OR (payment_type = 2 AND NOT (fare_amount < 20));
SELECT COUNT(*) FROM trips WHERE pickup_location_id = 132 AND dropoff_location_id = 132;
SELECT COUNT(*) FROM trips WHERE (pickup_location_id = 132) <> (dropoff_location_id = 132)
