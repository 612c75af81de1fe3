-- schema: hostile
-- DATE columns (issue 41): dates 1900-2100 with NULLs, before and at the epoch, an all-NULL
-- DATE column; compared with DATE, string and TIMESTAMP constants and with a TIMESTAMP
-- column (DuckDB promotes a DATE to its midnight's TIMESTAMP), aggregated, grouped, ordered,
-- extracted, truncated and cast
SELECT COUNT(dt), COUNT(*), MIN(dt), MAX(dt) FROM hostile;
SELECT COUNT(*) FROM hostile WHERE dt IS NULL;
SELECT COUNT(*) FROM hostile WHERE dt >= DATE '2019-01-01';
SELECT COUNT(*) FROM hostile WHERE dt < DATE '1970-01-01';
SELECT COUNT(*) FROM hostile WHERE dt = DATE '1969-12-31';
SELECT COUNT(*) FROM hostile WHERE dt = '1970-01-01';
SELECT COUNT(*) FROM hostile WHERE dt = '1970-03-01 12:00:00';
SELECT COUNT(*) FROM hostile WHERE dt > '1999-12-31 23:59:59';
SELECT COUNT(*) FROM hostile WHERE dt <> '1970-01-01';
SELECT COUNT(*) FROM hostile WHERE dt BETWEEN '1950-01-01' AND DATE '2000-12-31';
SELECT COUNT(*) FROM hostile WHERE dt IN ('1969-12-31', DATE '1970-03-01', '1970-01-01');
SELECT COUNT(*) FROM hostile WHERE dt NOT IN ('1969-12-31', '1970-01-01');
SELECT COUNT(*) FROM hostile WHERE dt > TIMESTAMP '1999-12-31 23:00:00';
SELECT COUNT(*) FROM hostile WHERE dt = TIMESTAMP '1970-01-01 00:00:00';
SELECT COUNT(*) FROM hostile WHERE dt < ts;
SELECT COUNT(*) FROM hostile WHERE dt >= ts;
SELECT COUNT(*) FROM hostile WHERE ts >= DATE '2000-01-01';
SELECT COUNT(*) FROM hostile WHERE CAST(ts AS DATE) = dt;
SELECT COUNT(*) FROM hostile WHERE nul_dt IS NULL;
SELECT COUNT(*) FROM hostile WHERE nul_dt > DATE '2000-01-01';
SELECT MIN(nul_dt), MAX(nul_dt), COUNT(nul_dt) FROM hostile;
SELECT k, MIN(dt), MAX(dt), COUNT(dt) FROM hostile GROUP BY k ORDER BY k NULLS LAST;
SELECT dt, COUNT(*) FROM hostile WHERE dt < DATE '1910-01-01' GROUP BY dt ORDER BY dt;
SELECT COUNT(DISTINCT dt) FROM hostile;
SELECT id, dt FROM hostile ORDER BY dt NULLS FIRST, id LIMIT 10;
SELECT id, dt FROM hostile ORDER BY dt DESC NULLS LAST, id LIMIT 10;
SELECT id, dt FROM hostile WHERE k = 3 ORDER BY id LIMIT 20;
SELECT EXTRACT(year FROM dt) AS y, COUNT(*) FROM hostile GROUP BY y ORDER BY y NULLS LAST;
SELECT EXTRACT(month FROM dt) AS mo, COUNT(*) FROM hostile GROUP BY mo ORDER BY mo NULLS LAST;
SELECT EXTRACT(dow FROM dt) AS dw, COUNT(*) FROM hostile GROUP BY dw ORDER BY dw NULLS LAST;
SELECT SUM(EXTRACT(day FROM dt)), SUM(EXTRACT(year FROM dt)), SUM(EXTRACT(doy FROM dt)) FROM hostile;
SELECT date_trunc('month', dt) AS mon, COUNT(*) FROM hostile WHERE dt < DATE '1915-01-01' GROUP BY mon ORDER BY mon;
SELECT MIN(date_trunc('year', dt)), MAX(date_trunc('week', dt)) FROM hostile;
SELECT id, CAST(dt AS TIMESTAMP) FROM hostile ORDER BY id LIMIT 12;
SELECT id, CAST(ts AS DATE) FROM hostile ORDER BY id LIMIT 12;
SELECT id, COALESCE(dt, DATE '2000-01-01') FROM hostile ORDER BY id LIMIT 12;
SELECT id, CASE WHEN k > 2 THEN dt END FROM hostile ORDER BY id LIMIT 12;
SELECT id, CASE WHEN k > 2 THEN dt ELSE ts END FROM hostile ORDER BY id LIMIT 12;
SELECT id, dt + INTERVAL 1 DAY FROM hostile ORDER BY id LIMIT 12;
SELECT id, dt + 1, dt - 1, dt - DATE '1970-01-01' FROM hostile ORDER BY id LIMIT 12;
SELECT MAX(dt) - MIN(dt) FROM hostile;
SELECT id, CAST(dt AS VARCHAR) FROM hostile ORDER BY id LIMIT 12;
SELECT b, MIN(dt), MAX(dt) FROM hostile GROUP BY b ORDER BY b NULLS LAST;
SELECT k FROM hostile GROUP BY k HAVING MAX(dt) > DATE '2090-01-01' ORDER BY k NULLS LAST;
SELECT quantile_disc(dt, 0.5) FROM hostile;
SELECT id, row_number() OVER (PARTITION BY k ORDER BY dt NULLS FIRST, id) FROM hostile ORDER BY id LIMIT 20;
SELECT COUNT(*) FROM hostile WHERE EXTRACT(year FROM dt) = 1969 OR dt IS NULL;
SELECT COUNT(*) FROM (SELECT dt FROM hostile UNION SELECT CAST(ts AS DATE) FROM hostile);
