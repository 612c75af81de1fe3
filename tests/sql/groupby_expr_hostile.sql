-- schema: hostile
-- hashed GROUP BY over NULL, NaN, -0.0/0.0 and +-inf keys, int64 extremes (sums past int64),
-- timestamps before 1970, booleans and all-NULL columns
SELECT fx, COUNT(*), SUM(big), MIN(f), MAX(fx) FROM hostile GROUP BY fx ORDER BY fx;
SELECT f, COUNT(*) FROM hostile GROUP BY f ORDER BY f;
SELECT big, COUNT(*), SUM(big) FROM hostile GROUP BY big ORDER BY big;
SELECT mid, COUNT(*) FROM hostile GROUP BY mid ORDER BY mid;
SELECT ts, COUNT(*) FROM hostile GROUP BY ts ORDER BY ts;
SELECT k, fx, SUM(big), AVG(mid), STDDEV(m), VAR_SAMP(fx) FROM hostile GROUP BY k, fx ORDER BY k, fx;
SELECT fx > 0 AS pos, b, COUNT(*), SUM(mid) FROM hostile GROUP BY pos, b ORDER BY pos, b;
SELECT date_trunc('year', ts) AS y, COUNT(*), MIN(ts), MAX(s) FROM hostile GROUP BY y ORDER BY y;
SELECT nul_f, nul_i, COUNT(*), SUM(big) FROM hostile GROUP BY nul_f, nul_i;
SELECT id, SUM(big) FROM hostile GROUP BY id ORDER BY id LIMIT 20;
SELECT w, COUNT(*) FROM hostile WHERE k = 2 GROUP BY w HAVING COUNT(*) > 1 ORDER BY w;
SELECT neg * 1000000 + small AS ns, COUNT(*) FROM hostile GROUP BY ns ORDER BY ns;
SELECT DISTINCT fx FROM hostile ORDER BY fx;
SELECT f32, COUNT(*) FROM hostile GROUP BY f32 ORDER BY f32 LIMIT 10;
SELECT k, big, COUNT(*) FROM hostile GROUP BY ALL ORDER BY 1, 2;
