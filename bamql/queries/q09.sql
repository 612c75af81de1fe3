-- several predicates: shared medium-length card trips
SELECT COUNT(*) AS trips, AVG(fare_amount + tip_amount) AS paid, MAX(trip_distance) AS longest
FROM trips
WHERE passenger_count >= 2 AND trip_distance BETWEEN 1 AND 5 AND payment_type = 1
