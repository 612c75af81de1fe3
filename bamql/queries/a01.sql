-- analyst: each payment type's share of all trips (a window over a fused GROUP BY)
SELECT payment_type, COUNT(*) AS n, COUNT(*) * 1.0 / SUM(COUNT(*)) OVER () AS share FROM trips GROUP BY payment_type ORDER BY payment_type
