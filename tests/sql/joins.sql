-- schema: trips
-- joins with the zone lookup (registered as zones): dimension conditions become key sets,
-- GROUP BY a dimension column regroups the key's groups; inner joins drop unmatched keys
SELECT z.Borough, COUNT(*) AS trips, AVG(t.fare_amount) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY z.Borough ORDER BY z.Borough;
SELECT COUNT(*), SUM(t.total_amount) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Zone LIKE 'Williamsburg%';
SELECT pu.Borough, dz.Borough, COUNT(*) FROM trips t JOIN zones pu ON t.pickup_location_id = pu.LocationID LEFT JOIN zones dz ON t.dropoff_location_id = dz.LocationID GROUP BY 1, 2 ORDER BY 1, 2;
SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID;
SELECT COUNT(*), SUM(t.fare_amount) FROM trips t LEFT JOIN zones z ON t.dropoff_location_id = z.LocationID;
SELECT z.Borough, COUNT(*), MIN(t.fare_amount), MAX(t.trip_distance) FROM trips t LEFT JOIN zones z ON t.dropoff_location_id = z.LocationID GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Borough IS NULL;
SELECT COUNT(*) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Borough IS NOT NULL AND z.Borough <> 'Manhattan';
SELECT z.service_zone, COUNT(*) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Borough IS NULL OR z.Borough IN ('Queens', 'Bronx') GROUP BY 1 ORDER BY 1;
SELECT COUNT(*), AVG(t.tip_amount) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Borough = 'Brooklyn';
SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Borough IN ('Queens', 'Bronx') AND t.fare_amount > 10;
SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Zone NOT LIKE '%a%' AND NOT z.Borough = 'EWR';
SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Zone ILIKE 'williamsburg%' OR z.LocationID < 5;
SELECT COUNT(*), SUM(t.fare_amount) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Zone LIKE 'No such zone%';
SELECT COUNT(*), SUM(t.fare_amount) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Zone LIKE 'No such zone%';
SELECT z.Borough, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Zone LIKE 'No such zone%' GROUP BY 1;
SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.LocationID BETWEEN 100 AND 120 AND z.Zone LIKE '_a%';
SELECT z.Zone, COUNT(*) FROM trips t JOIN zones z ON z.LocationID = t.pickup_location_id WHERE z.Borough = 'Staten Island' OR z.Borough = 'EWR' GROUP BY z.Zone ORDER BY 2 DESC, 1 LIMIT 3;
SELECT z.Borough, t.vendor_id, COUNT(*), SUM(t.passenger_count) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY 1, 2 HAVING COUNT(*) > 3 ORDER BY 1, 2;
SELECT t.payment_type, dz.Borough, AVG(t.total_amount) FROM trips t JOIN zones pu ON t.pickup_location_id = pu.LocationID JOIN zones dz ON t.dropoff_location_id = dz.LocationID WHERE pu.Zone LIKE 'Williamsburg%' AND dz.Borough <> 'Manhattan' GROUP BY 1, 2 ORDER BY 1, 2;
SELECT z.LocationID, COUNT(*), MAX(t.pickup_datetime) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Borough = 'Unknown' GROUP BY 1 ORDER BY 1;
SELECT Borough, COUNT(*) FROM trips JOIN zones ON pickup_location_id = LocationID GROUP BY Borough ORDER BY COUNT(*) DESC, Borough;
SELECT z.Borough, EXTRACT(HOUR FROM t.pickup_datetime) AS h, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE t.trip_distance > 2 GROUP BY 1, 2 ORDER BY 1, 2 LIMIT 20;
SELECT z.Borough, SUM(t.tip_amount) / SUM(t.fare_amount), COUNT(*) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID WHERE t.payment_type = 1 GROUP BY z.Borough ORDER BY 1;
SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Borough = 'Queens' OR t.fare_amount > 5;
SELECT COUNT(*), SUM(t.fare_amount) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID WHERE t.dropoff_location_id < z.LocationID;
SELECT t.vendor_id, COUNT(*), SUM(z.LocationID - t.dropoff_location_id), MAX(z.LocationID) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY 1 ORDER BY 1;
SELECT t.dropoff_location_id > z.LocationID AS later, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID GROUP BY 1 ORDER BY 1
;
SELECT z.Borough, COUNT(*), SUM(t.fare_amount) FROM trips t LEFT JOIN zones z ON t.pickup_location_id IS NOT DISTINCT FROM z.LocationID GROUP BY 1 ORDER BY 1 NULLS FIRST;
SELECT COUNT(*), COUNT(z.Zone) FROM trips t FULL JOIN zones z ON t.dropoff_location_id IS NOT DISTINCT FROM z.LocationID;
SELECT COUNT(*), COUNT(z.Zone), SUM(t.fare_amount) FROM trips t FULL JOIN zones z ON t.dropoff_location_id = z.LocationID AND t.payment_type = 1 AND z.Borough <> 'Queens';
