-- trip distances by vendor: a float key beside an integer one (hashed)
SELECT vendor_id, trip_distance, count(*) AS trips, max(fare_amount) AS top_fare FROM trips GROUP BY 1, 2
