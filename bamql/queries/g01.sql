-- zone pairs: a GROUP BY of 70 thousand slots, most of them empty
SELECT pickup_location_id, dropoff_location_id, count(*) AS trips, avg(fare_amount) AS fare FROM trips GROUP BY 1, 2
