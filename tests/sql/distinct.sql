-- schema: trips
-- COUNT(DISTINCT c) of small-domain columns: run grouped by c as well, regrouped on the host
SELECT COUNT(DISTINCT payment_type) FROM trips;
SELECT COUNT(DISTINCT vendor_id), COUNT(DISTINCT vendor_id) FILTER (WHERE fare_amount > 20), COUNT(*), SUM(fare_amount) FROM trips;
SELECT vendor_id, COUNT(DISTINCT pickup_location_id) AS zones, COUNT(*), AVG(tip_amount), MAX(trip_distance) FROM trips GROUP BY vendor_id ORDER BY vendor_id;
SELECT payment_type, COUNT(DISTINCT passenger_count), STDDEV(fare_amount), MIN(fare_amount) FROM trips WHERE trip_distance > 2 GROUP BY 1 ORDER BY 1;
SELECT COUNT(DISTINCT store_and_fwd_flag), COUNT(store_and_fwd_flag) FROM trips;
SELECT EXTRACT(HOUR FROM pickup_datetime) AS h, COUNT(DISTINCT payment_type) FROM trips GROUP BY 1 ORDER BY 1;
SELECT COUNT(DISTINCT EXTRACT(DOW FROM pickup_datetime)) FROM trips WHERE passenger_count > 2;
SELECT vendor_id, COUNT(DISTINCT vendor_id), COUNT(vendor_id) FROM trips GROUP BY vendor_id ORDER BY vendor_id;
SELECT passenger_count, COUNT(DISTINCT dropoff_location_id) AS n FROM trips GROUP BY 1 HAVING COUNT(DISTINCT dropoff_location_id) > 10 ORDER BY n DESC, 1 LIMIT 3;
SELECT COUNT(DISTINCT payment_type), SUM(fare_amount) FROM trips WHERE fare_amount < -1000000;
SELECT vendor_id, COUNT(DISTINCT payment_type) FROM trips WHERE fare_amount < -1000000 GROUP BY 1;
SELECT z.Borough, COUNT(DISTINCT t.payment_type), COUNT(DISTINCT t.payment_type) FILTER (WHERE t.tip_amount > 0), COUNT(*), AVG(t.fare_amount) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY z.Borough ORDER BY 1;
SELECT z.Borough, COUNT(DISTINCT t.pickup_location_id) FROM trips t LEFT JOIN zones z ON t.dropoff_location_id = z.LocationID GROUP BY 1 ORDER BY 1;
SELECT COUNT(DISTINCT t.dropoff_location_id) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Borough = 'Brooklyn';
SELECT MIN(DISTINCT fare_amount), MAX(DISTINCT passenger_count), COUNT(DISTINCT vendor_id) FROM trips;
-- COUNT(DISTINCT) of a float, a timestamp, an expression: the plan tree counts the values
SELECT COUNT(DISTINCT fare_amount) FROM trips;
SELECT COUNT(DISTINCT pickup_datetime) FROM trips;
SELECT COUNT(DISTINCT vendor_id + 1) FROM trips;
SELECT payment_type, COUNT(DISTINCT fare_amount), COUNT(*) FROM trips GROUP BY 1 ORDER BY 1;
SELECT COUNT(DISTINCT trip_distance) FILTER (WHERE fare_amount > 10), COUNT(DISTINCT tip_amount) FROM trips;
