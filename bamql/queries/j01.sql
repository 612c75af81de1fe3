-- analyst: trips whose fare is above their pickup zone's average (a join to a GROUP BY)
SELECT COUNT(*) AS above FROM trips t JOIN (SELECT pickup_location_id, AVG(fare_amount) AS avg_fare FROM trips GROUP BY 1) z ON t.pickup_location_id = z.pickup_location_id WHERE t.fare_amount > z.avg_fare
