-- analyst: the median fare of each pickup zone (an exact quantile per group)
SELECT pickup_location_id, MEDIAN(fare_amount) AS median_fare FROM trips GROUP BY pickup_location_id ORDER BY pickup_location_id
