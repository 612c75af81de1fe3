-- schema: trips
-- NULL semantics on congestion_surcharge (NULL in the real sample and the generated trips)
SELECT COUNT(*) FROM trips WHERE congestion_surcharge IS NULL;
SELECT COUNT(*) FROM trips WHERE congestion_surcharge IS NOT NULL;
SELECT COUNT(*) FROM trips WHERE NOT (congestion_surcharge IS NULL);
SELECT COUNT(*) FROM trips WHERE NOT (congestion_surcharge IS NOT NULL);
SELECT COUNT(*), COUNT(congestion_surcharge), SUM(congestion_surcharge), AVG(congestion_surcharge), MIN(congestion_surcharge), MAX(congestion_surcharge) FROM trips;
SELECT COUNT(*) FROM trips WHERE congestion_surcharge = NULL;
SELECT COUNT(*) FROM trips WHERE congestion_surcharge <> NULL;
SELECT COUNT(*) FROM trips WHERE NOT (congestion_surcharge = 2.5);
SELECT COUNT(*) FROM trips WHERE congestion_surcharge + 1 > 1;
SELECT SUM(total_amount + congestion_surcharge), COUNT(total_amount + congestion_surcharge) FROM trips;
SELECT AVG(congestion_surcharge * 2) FROM trips WHERE congestion_surcharge IS NOT NULL;
SELECT MAX(congestion_surcharge) FROM trips WHERE congestion_surcharge IS NULL;
SELECT COUNT(congestion_surcharge) FROM trips WHERE congestion_surcharge IS NULL;
SELECT COUNT(*) FROM trips WHERE congestion_surcharge IS NULL AND payment_type = 1;
SELECT COUNT(*) FROM trips WHERE congestion_surcharge IS NULL OR congestion_surcharge = 0;
SELECT COUNT(*) FROM trips WHERE trip_distance IS NULL;
SELECT COUNT(*) FROM trips WHERE pickup_datetime IS NOT NULL;
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag IS NULL;
SELECT COUNT(*) FROM trips WHERE vendor_id IS NOT NULL;
SELECT payment_type, COUNT(congestion_surcharge), COUNT(*) FROM trips GROUP BY payment_type;
SELECT payment_type, AVG(congestion_surcharge) FROM trips WHERE congestion_surcharge IS NOT NULL GROUP BY payment_type ORDER BY payment_type;
SELECT COUNT(*) FROM trips WHERE congestion_surcharge IN (2.5, NULL) OR congestion_surcharge IS NULL;
SELECT COUNT(*), SUM(NULL::BIGINT), COUNT(NULL::DOUBLE), MAX(CAST(NULL AS INTEGER)) FROM trips;
SELECT SUM(COALESCE(congestion_surcharge, NULL::DOUBLE)), COUNT(COALESCE(congestion_surcharge, NULL::DOUBLE)) FROM trips;
SELECT COUNT(*) FROM trips WHERE passenger_count > NULL::INTEGER OR NULL::BIGINT IS NULL;
SELECT payment_type, MAX(trip_distance) + CAST(NULL AS DOUBLE), COUNT(*) FROM trips GROUP BY 1 ORDER BY 1;
