-- top-k: the ten largest fares, with their tips (rows, not groups)
SELECT fare_amount, tip_amount, pickup_location_id FROM trips ORDER BY fare_amount DESC, tip_amount DESC, pickup_location_id LIMIT 10
