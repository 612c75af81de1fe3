-- schema: hostile
-- COUNT(DISTINCT c) over NULLs (not counted), negative and unicode keys, all-NULL columns
SELECT COUNT(DISTINCT neg), COUNT(DISTINCT neg) FILTER (WHERE k > 2), COUNT(*) FROM hostile;
SELECT k, COUNT(DISTINCT s), COUNT(s), SUM(mid), AVG(f), MIN(fx), MAX(fx), VAR_SAMP(m) FROM hostile GROUP BY k ORDER BY k;
SELECT s, COUNT(DISTINCT small), SUM(big), STDDEV_POP(w) FROM hostile GROUP BY s ORDER BY s;
SELECT COUNT(DISTINCT nul_i), COUNT(*) FROM hostile;
SELECT COUNT(DISTINCT nul_s), SUM(k) FROM hostile;
SELECT k, COUNT(DISTINCT nul_s) FROM hostile GROUP BY k;
SELECT b, COUNT(DISTINCT k) FROM hostile WHERE neg < 0 GROUP BY b;
SELECT COUNT(DISTINCT EXTRACT(HOUR FROM nul_ts)) FROM hostile;
SELECT COUNT(DISTINCT EXTRACT(MONTH FROM ts)), MIN(ts) FROM hostile;
SELECT k, COUNT(DISTINCT s) FILTER (WHERE f > 0) AS n FROM hostile GROUP BY k HAVING COUNT(*) > 0 ORDER BY n, k;
SELECT COUNT(DISTINCT small), SUM(mid) FROM hostile WHERE k > 100;
SELECT neg, COUNT(DISTINCT k) FROM hostile WHERE neg BETWEEN -5 AND 5 GROUP BY neg ORDER BY neg;
-- COUNT(DISTINCT) of large domains: the plan tree counts the values
SELECT COUNT(DISTINCT big) FROM hostile;
SELECT k, COUNT(DISTINCT mid), COUNT(*) FROM hostile GROUP BY k ORDER BY k;
