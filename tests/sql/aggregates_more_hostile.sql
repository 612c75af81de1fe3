-- schema: hostile
-- HAVING and ORDER BY on aliases, WITH, over NULLs, NaN and empty tables
SELECT k, COUNT(*) AS n, SUM(fx) AS s FROM hostile GROUP BY k HAVING n > 0 ORDER BY s DESC, k;
SELECT s, MIN(f) AS lo FROM hostile GROUP BY s HAVING lo < 0 ORDER BY lo, s;
WITH h AS (SELECT k AS key, fx * 2 AS x FROM hostile WHERE fx = fx) SELECT key, COUNT(x), MAX(x) FROM h GROUP BY key ORDER BY key;
WITH h AS (SELECT * FROM hostile WHERE nul_i IS NOT NULL) SELECT COUNT(*), SUM(mid) FROM h;
SELECT DISTINCT k, s FROM hostile;
SELECT DISTINCT nul_i FROM hostile;
SELECT DISTINCT k FROM hostile WHERE fx > 0 ORDER BY k;
