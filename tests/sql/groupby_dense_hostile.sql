-- schema: hostile
-- dense GROUP BY keys (planner.domains) over NULLs, negatives, timestamps before 1970,
-- all-NULL columns and an empty filter
SELECT extract(year FROM ts) AS y, count(*), sum(big), min(fx), max(mid) FROM hostile GROUP BY y ORDER BY y;
SELECT k, extract(isoyear FROM ts) AS y, count(*) FROM hostile GROUP BY 1, 2 ORDER BY 1, 2;
SELECT round(m) AS r, count(*), sum(mid), avg(fx) FROM hostile GROUP BY r ORDER BY r;
SELECT floor(m) AS a, count(*) FROM hostile GROUP BY a ORDER BY a;
SELECT ceil(m) AS a, k, count(*), min(m), max(m) FROM hostile GROUP BY a, k ORDER BY a, k;
SELECT CAST(m AS INTEGER) AS c, count(*) FROM hostile GROUP BY c ORDER BY c;
SELECT round(w) AS r, count(*) FROM hostile GROUP BY r ORDER BY r;
SELECT k - neg AS d, count(*), sum(small) FROM hostile GROUP BY d ORDER BY d;
SELECT abs(neg) AS a, count(*) FROM hostile GROUP BY a ORDER BY a;
SELECT 3 * neg AS t, count(*) FROM hostile GROUP BY t ORDER BY t;
SELECT extract(year FROM nul_ts) AS y, count(*) FROM hostile GROUP BY y;
SELECT nul_i + k AS z, count(*) FROM hostile GROUP BY z;
SELECT k, round(m) AS r, count(*), sum(big) FROM hostile WHERE m > 1e9 GROUP BY 1, 2;
SELECT extract(year FROM ts) AS y, k, count(*), sum(m), min(fx), max(fx) FROM hostile WHERE k > 2 GROUP BY ALL ORDER BY 1, 2;
SELECT date_trunc('day', ts) AS d, count(*), sum(mid) FROM hostile GROUP BY d ORDER BY d;
SELECT date_trunc('week', ts) AS w, k, count(*) FROM hostile GROUP BY 1, 2 ORDER BY 1, 2;
SELECT date_trunc('month', ts) AS mo, date_trunc('quarter', ts) AS q, date_trunc('year', ts) AS y, count(*), min(fx) FROM hostile GROUP BY ALL ORDER BY 1;
SELECT date_trunc('month', nul_ts) AS mo, count(*) FROM hostile GROUP BY mo;
SELECT fx > 0 AS pos, b, nul_i IS NULL AS n, count(*), sum(big) FROM hostile GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
SELECT k IN (1, 2) AS small, date_trunc('year', ts) AS y, count(*) FROM hostile GROUP BY 1, 2 ORDER BY 1, 2;
SELECT k FROM hostile GROUP BY k ORDER BY SUM(big) DESC NULLS FIRST, k LIMIT 3;
SELECT extract(year FROM ts) AS y FROM hostile GROUP BY y ORDER BY MAX(fx) DESC, y LIMIT 5 OFFSET 1;
