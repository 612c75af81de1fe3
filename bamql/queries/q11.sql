-- NULL semantics: missing congestion surcharges
SELECT COUNT(*) AS trips, COUNT(congestion_surcharge) AS with_surcharge, AVG(congestion_surcharge) AS avg_surcharge, SUM(congestion_surcharge) AS total_surcharge
FROM trips
WHERE congestion_surcharge IS NULL OR congestion_surcharge > 0
