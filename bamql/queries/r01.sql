-- analyst: trips per hour and their running total (a window over a GROUP BY of an expression)
SELECT hour, n, SUM(n) OVER (ORDER BY hour) AS running FROM (SELECT date_trunc('hour', pickup_datetime) AS hour, COUNT(*) AS n FROM trips GROUP BY 1) ORDER BY hour
