-- schema: trips
-- IN, NOT IN, BETWEEN, NOT BETWEEN, with NULLs and duplicates in the lists
SELECT AVG(trip_distance) FROM trips WHERE pickup_location_id IN (255, 256);
SELECT AVG(trip_distance), COUNT(*) FROM trips WHERE pickup_location_id IN (255);
SELECT COUNT(*) FROM trips WHERE pickup_location_id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 132, 138, 161, 230, 236, 237);
SELECT COUNT(*) FROM trips WHERE pickup_location_id NOT IN (236, 237, 161);
SELECT COUNT(*) FROM trips WHERE pickup_location_id IN (255, 255, 256, 256);
SELECT COUNT(*) FROM trips WHERE pickup_location_id IN (0, 266, 1000);
SELECT COUNT(*) FROM trips WHERE passenger_count IN (1, NULL);
SELECT COUNT(*) FROM trips WHERE passenger_count NOT IN (1, NULL);
SELECT COUNT(*) FROM trips WHERE payment_type IN (1.0, 2.5);
SELECT COUNT(*) FROM trips WHERE payment_type NOT IN (1, 2);
SELECT COUNT(*) FROM trips WHERE NOT (payment_type IN (1, 2));
SELECT COUNT(*) FROM trips WHERE trip_distance IN (1, 1.5, 2);
SELECT COUNT(*) FROM trips WHERE fare_amount IN (52, 52.5, 2.5);
SELECT COUNT(*) FROM trips WHERE congestion_surcharge IN (0, 2.5);
SELECT COUNT(*) FROM trips WHERE congestion_surcharge NOT IN (0, 2.5);
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag IN ('Y');
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag IN ('Y', 'N');
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag NOT IN ('N');
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag IN ('X', 'maybe');
SELECT COUNT(*) FROM trips WHERE vendor_id IN (1) AND pickup_location_id NOT IN (255, 256);
SELECT COUNT(*), AVG(fare_amount) FROM trips WHERE trip_distance BETWEEN 1 AND 5;
SELECT COUNT(*), AVG(fare_amount) FROM trips WHERE trip_distance BETWEEN 1.25 AND 1.75;
SELECT COUNT(*) FROM trips WHERE trip_distance BETWEEN 5 AND 1;
SELECT COUNT(*) FROM trips WHERE trip_distance BETWEEN 2 AND 2;
SELECT COUNT(*) FROM trips WHERE trip_distance NOT BETWEEN 1 AND 5;
SELECT COUNT(*) FROM trips WHERE NOT (trip_distance BETWEEN 1 AND 5);
SELECT COUNT(*) FROM trips WHERE passenger_count BETWEEN 2 AND 4;
SELECT COUNT(*) FROM trips WHERE pickup_location_id BETWEEN 255 AND 256;
SELECT COUNT(*) FROM trips WHERE fare_amount BETWEEN -10 AND 0;
SELECT COUNT(*) FROM trips WHERE congestion_surcharge BETWEEN 0 AND 2.5;
SELECT COUNT(*) FROM trips WHERE congestion_surcharge NOT BETWEEN 0.5 AND 2;
SELECT COUNT(*) FROM trips WHERE total_amount BETWEEN fare_amount AND fare_amount + 5;
SELECT COUNT(*) FROM trips WHERE pickup_datetime BETWEEN TIMESTAMP '2019-01-10' AND TIMESTAMP '2019-01-20';
SELECT COUNT(*) FROM trips WHERE pickup_datetime NOT BETWEEN TIMESTAMP '2019-01-10' AND TIMESTAMP '2019-12-20';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag BETWEEN 'A' AND 'O';
SELECT COUNT(*) FROM trips WHERE payment_type IN (1, 2) AND trip_distance BETWEEN 0.5 AND 3 AND passenger_count NOT IN (0, 5, 6)
