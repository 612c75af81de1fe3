-- fares as they are: a GROUP BY a float key (no dense range: the GPU kernel's hash table)
SELECT fare_amount, count(*) AS trips, avg(tip_amount) AS tip FROM trips GROUP BY fare_amount
