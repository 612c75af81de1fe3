SELECT AVG(trip_distance) FROM trips WHERE pickup_location_id IN (255, 256)
