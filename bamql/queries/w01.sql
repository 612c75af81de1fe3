-- analyst: the three largest fares of each pickup zone (a window filtered by its rank)
SELECT pickup_location_id, fare_amount, trip_distance FROM trips QUALIFY ROW_NUMBER() OVER (PARTITION BY pickup_location_id ORDER BY fare_amount DESC, trip_distance DESC) <= 3 ORDER BY pickup_location_id, fare_amount DESC, trip_distance DESC
