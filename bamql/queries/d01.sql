-- trips and fares by hour of the year (date_trunc: thousands of groups)
SELECT date_trunc('hour', pickup_datetime) AS hour, count(*) AS trips, avg(fare_amount) AS fare FROM trips GROUP BY hour
