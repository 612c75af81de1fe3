-- schema: hostile
-- the plan tree over hostile values: NULLs, NaN, +-inf, -0.0, int64 extremes, old timestamps
SELECT k, n, RANK() OVER (ORDER BY n DESC, k) AS r FROM (SELECT k, COUNT(*) AS n FROM hostile GROUP BY k) ORDER BY r;
SELECT fx, c FROM (SELECT fx, COUNT(*) AS c FROM hostile GROUP BY fx) WHERE c > 1 ORDER BY fx NULLS FIRST;
SELECT COUNT(*), COUNT(DISTINCT f), COUNT(DISTINCT fx) FROM (SELECT f, fx FROM hostile);
SELECT MAX(f), MIN(f), MAX(fx), MIN(fx) FROM (SELECT f, fx FROM hostile WHERE id < 50);
SELECT id, SUM(f) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM hostile WHERE id < 40 ORDER BY id;
SELECT id, SUM(big) OVER (PARTITION BY k ORDER BY id) FROM hostile WHERE id < 60 ORDER BY id;
SELECT k, SUM(big), SUM(mid) FROM (SELECT k, big, mid FROM hostile) GROUP BY k ORDER BY k NULLS FIRST;
SELECT id, LAG(s) OVER (PARTITION BY k ORDER BY id), LEAD(f, 2) OVER (PARTITION BY k ORDER BY id) FROM hostile WHERE id < 80 ORDER BY id;
SELECT id, MAX(f) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM hostile WHERE id < 60 ORDER BY id;
SELECT COUNT(*) FROM hostile WHERE fx IN (SELECT fx FROM hostile WHERE id < 30);
SELECT COUNT(*) FROM hostile WHERE k NOT IN (SELECT k FROM hostile WHERE id < 0);
SELECT COUNT(*) FROM hostile WHERE nul_i NOT IN (SELECT k FROM hostile WHERE k IS NOT NULL AND id < 20);
SELECT COUNT(*) FROM hostile h WHERE EXISTS (SELECT 1 FROM hostile g WHERE g.fx = h.fx AND g.k = h.k);
SELECT COUNT(*) FROM hostile h WHERE f > (SELECT AVG(g.f) FROM hostile g WHERE g.k = h.k);
SELECT id, (SELECT COUNT(*) FROM hostile g WHERE g.k = h.nul_i) FROM hostile h WHERE id < 30 ORDER BY id;
SELECT fx FROM hostile WHERE id < 100 INTERSECT SELECT fx FROM hostile WHERE id >= 100 ORDER BY 1 NULLS FIRST;
SELECT fx FROM hostile WHERE id < 100 EXCEPT SELECT fx FROM hostile WHERE id >= 100 ORDER BY 1 NULLS FIRST;
SELECT k, f FROM hostile WHERE id < 20 UNION ALL SELECT small, big FROM hostile WHERE id < 20 ORDER BY 1 NULLS FIRST, 2 NULLS FIRST;
SELECT k, small, COUNT(*) FROM hostile GROUP BY ROLLUP (k, small) ORDER BY 1 NULLS LAST, 2 NULLS LAST, 3;
SELECT upper(s), length(s), s || '!' FROM hostile WHERE id < 30 ORDER BY id;
SELECT concat(s, nul_s), coalesce(nul_s, s, 'none') FROM hostile WHERE id < 30 ORDER BY id;
SELECT strftime(ts, '%Y-%m-%d %H:%M:%S'), CAST(ts AS DATE), EXTRACT(epoch FROM ts) FROM hostile WHERE id < 30 ORDER BY id;
SELECT date_diff('day', ts, nul_ts), date_diff('hour', ts, ts + INTERVAL 90 MINUTE) FROM hostile WHERE id < 30 ORDER BY id;
SELECT CAST(f AS VARCHAR), CAST(m AS VARCHAR) FROM hostile WHERE id < 30 ORDER BY id;
SELECT greatest(f, fx), least(f, fx), sign(f) FROM hostile WHERE id < 40 ORDER BY id;
SELECT ROUND(f, 1), CAST(f AS BIGINT) FROM hostile WHERE id < 40 AND abs(f) < 1e15 ORDER BY id;
SELECT id, NTILE(3) OVER (ORDER BY id), ROW_NUMBER() OVER (PARTITION BY s ORDER BY id DESC) FROM hostile WHERE id < 50 ORDER BY id;
SELECT s, string_agg(DISTINCT CAST(k AS VARCHAR), ',' ORDER BY CAST(k AS VARCHAR)) FROM hostile WHERE k IS NOT NULL GROUP BY s ORDER BY s NULLS FIRST;
SELECT k, quantile_cont(f, 0.25), MEDIAN(small) FROM (SELECT k, f, small FROM hostile WHERE abs(f) < 1e300) GROUP BY k ORDER BY k NULLS FIRST;
SELECT a.k, a.n, b.n FROM (SELECT k, COUNT(*) AS n FROM hostile GROUP BY k) a FULL JOIN (SELECT small AS k, COUNT(*) AS n FROM hostile GROUP BY small) b ON a.k = b.k ORDER BY 1 NULLS FIRST, 2 NULLS FIRST, 3 NULLS FIRST;
-- session 49: DISTINCT inside SUM, AVG, STDDEV over NULLs, NaN, -0.0, int64 extremes and decimals; DISTINCT ON
SELECT k, SUM(DISTINCT fx), AVG(DISTINCT f), SUM(DISTINCT dec), AVG(DISTINCT dec), SUM(DISTINCT nul_i), COUNT(DISTINCT fx) FROM hostile GROUP BY k ORDER BY k NULLS FIRST;
SELECT SUM(DISTINCT big), SUM(DISTINCT mid), AVG(DISTINCT small), STDDEV(DISTINCT neg), VARIANCE(DISTINCT small) FROM hostile;
SELECT small, SUM(DISTINCT neg) FILTER (WHERE b), AVG(DISTINCT m) FROM hostile GROUP BY CUBE (small) ORDER BY 1 NULLS FIRST, 2 NULLS FIRST, 3;
SELECT DISTINCT ON (k) k, id, fx FROM hostile ORDER BY k NULLS FIRST, fx DESC NULLS LAST, id;
SELECT DISTINCT ON (small, b) small, b, id FROM hostile ORDER BY small, b, id DESC;
-- numbers as conditions over NaN, -0.0, +-inf and NULL; LIKE a column; AVG of old timestamps and DATEs; date_trunc by decades
SELECT COUNT(*), COUNT(fx) FROM hostile WHERE fx;
SELECT COUNT(*) FROM hostile WHERE NOT f OR big;
SELECT k, COUNT(*) FROM hostile GROUP BY k HAVING SUM(fx) ORDER BY k;
SELECT SUM(CASE WHEN dec THEN 1 ELSE 0 END), SUM(CASE WHEN small THEN 1 END), COUNT(*) FROM hostile;
SELECT COUNT(*) FROM hostile WHERE s LIKE s;
SELECT COUNT(*) FROM hostile WHERE s LIKE '%' || nul_s OR s ILIKE substr(s, 1, 1) || '%';
SELECT k, AVG(ts), AVG(dt), AVG(nul_ts) FROM hostile GROUP BY k ORDER BY k;
SELECT AVG(ts) FILTER (WHERE ts < '1970-01-01'), AVG(DISTINCT dt) FROM hostile;
SELECT date_trunc('decade', ts) AS d, date_trunc('century', dt) AS c, date_trunc('millennium', ts) AS m, COUNT(*) FROM hostile GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
SELECT COUNT(*) FROM hostile WHERE starts_with(s, NULL) IS NULL;
-- joins on DOUBLE keys over NaN, -0.0 and NULL; an inequality join
SELECT COUNT(*), COUNT(a.fx) FROM hostile a JOIN hostile b ON a.fx = b.fx;
SELECT a.k, COUNT(*) FROM hostile a JOIN hostile b ON a.k = b.k AND a.fx > b.fx GROUP BY a.k ORDER BY a.k;
