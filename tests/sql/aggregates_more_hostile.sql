-- schema: hostile
-- HAVING and ORDER BY on aliases, WITH, over NULLs, NaN and empty tables
SELECT k, COUNT(*) AS n, SUM(fx) AS s FROM hostile GROUP BY k HAVING n > 0 ORDER BY s DESC, k;
SELECT s, MIN(f) AS lo FROM hostile GROUP BY s HAVING lo < 0 ORDER BY lo, s;
WITH h AS (SELECT k AS key, fx * 2 AS x FROM hostile WHERE fx = fx) SELECT key, COUNT(x), MAX(x) FROM h GROUP BY key ORDER BY key;
WITH h AS (SELECT * FROM hostile WHERE nul_i IS NOT NULL) SELECT COUNT(*), SUM(mid) FROM h;
SELECT DISTINCT k, s FROM hostile;
SELECT DISTINCT nul_i FROM hostile;
SELECT DISTINCT k FROM hostile WHERE fx > 0 ORDER BY k;
SELECT STDDEV(m), VARIANCE(w), VAR_POP(mid), STDDEV_POP(neg), STDDEV(small) FROM hostile;
SELECT k, STDDEV(m), VAR_SAMP(big), STDDEV_POP(dec), VARIANCE(f32) FROM hostile GROUP BY k;
SELECT s, STDDEV(fx), VAR_POP(f) FROM hostile GROUP BY s;
SELECT STDDEV(nul_f), VAR_POP(nul_i), STDDEV(m) FROM hostile WHERE k = 3;
SELECT k, STDDEV(m + 1e6) FROM hostile GROUP BY k;
SELECT k, COUNT(*) FILTER (WHERE fx > 0), SUM(mid) FILTER (WHERE fx <> fx), MIN(s) FILTER (WHERE neg > 0), MAX(ts) FILTER (WHERE m > 0) FROM hostile GROUP BY k;
SELECT COUNT(*) FILTER (WHERE nul_i IS NULL), COUNT(neg) FILTER (WHERE neg > 0), AVG(dec) FILTER (WHERE dec < 0) FROM hostile;
SELECT COUNT(*) FILTER (WHERE k IS NULL), STDDEV(m) FILTER (WHERE k IS NULL) FROM hostile;
