SELECT AVG(trip_distance), AVG(total_amount) FROM trips WHERE pickup_location_id IN (255, 256)
