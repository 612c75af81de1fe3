-- schema: hostile
-- GROUP BY over NULL keys, negative keys, unicode strings, booleans, all-NULL columns
SELECT k, COUNT(*) FROM hostile GROUP BY k;
SELECT k, COUNT(*), SUM(m), AVG(f), MIN(ts), MAX(s) FROM hostile GROUP BY k ORDER BY k;
SELECT k, COUNT(*) FROM hostile GROUP BY k ORDER BY k DESC;
SELECT neg, COUNT(*) FROM hostile GROUP BY neg;
SELECT neg, SUM(m) FROM hostile WHERE neg < -100 GROUP BY neg ORDER BY neg;
SELECT small, COUNT(*) FROM hostile GROUP BY small;
SELECT small, COUNT(*) FROM hostile GROUP BY small ORDER BY small LIMIT 5;
SELECT s, COUNT(*) FROM hostile GROUP BY s;
SELECT s, COUNT(*), SUM(neg) FROM hostile GROUP BY s ORDER BY s;
SELECT s, COUNT(*) FROM hostile GROUP BY s ORDER BY s DESC;
SELECT b, COUNT(*) FROM hostile GROUP BY b;
SELECT b, k, COUNT(*) FROM hostile GROUP BY b, k;
SELECT k, s, COUNT(*), AVG(w) FROM hostile GROUP BY k, s;
SELECT nul_i, COUNT(*) FROM hostile GROUP BY nul_i;
SELECT nul_s, COUNT(*), SUM(k) FROM hostile GROUP BY nul_s;
SELECT k, nul_s, COUNT(*) FROM hostile GROUP BY 1, 2 ORDER BY 1;
SELECT EXTRACT(HOUR FROM ts), COUNT(*) FROM hostile GROUP BY 1;
SELECT EXTRACT(DOW FROM ts), COUNT(*) FROM hostile GROUP BY 1 ORDER BY 1;
SELECT EXTRACT(MINUTE FROM ts), COUNT(*) FROM hostile WHERE ts < TIMESTAMP '1970-01-01' GROUP BY 1;
SELECT EXTRACT(HOUR FROM nul_ts), COUNT(*) FROM hostile GROUP BY 1;
SELECT k, COUNT(*) AS n FROM hostile GROUP BY k HAVING COUNT(*) > 100 ORDER BY k;
SELECT k, SUM(w) AS sw FROM hostile GROUP BY k HAVING SUM(w) > 0 ORDER BY k;
SELECT k, MAX(fx) FROM hostile GROUP BY k;
SELECT k, COUNT(fx), SUM(fx) FROM hostile GROUP BY k;
SELECT k, MIN(big), MAX(big) FROM hostile GROUP BY k;
SELECT k, SUM(big) FROM hostile GROUP BY k;
SELECT k, SUM(mid), AVG(dec) FROM hostile GROUP BY k ORDER BY k;
SELECT s, MIN(ts), MAX(ts), COUNT(ts) FROM hostile GROUP BY s ORDER BY s;
SELECT k, COUNT(*) FROM hostile WHERE FALSE GROUP BY k;
SELECT neg, COUNT(*) AS n FROM hostile GROUP BY neg ORDER BY n DESC, neg LIMIT 5;
SELECT s, AVG(m) AS am FROM hostile GROUP BY s ORDER BY am, s;
SELECT k, AVG(m) FROM hostile GROUP BY k ORDER BY AVG(m) DESC, k
