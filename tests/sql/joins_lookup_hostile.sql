-- schema: hostile
-- joins whose smaller side holds each key once (a derived GROUP BY, DISTINCT): looked up in a
-- hash set of its keys, over NULL, NaN, -0.0, int64 extremes, strings and timestamps
SELECT h.id, a.n FROM hostile h JOIN (SELECT fx, COUNT(*) AS n FROM hostile GROUP BY fx) a ON h.fx = a.fx WHERE h.id < 200 ORDER BY h.id;
SELECT h.id, a.n FROM hostile h LEFT JOIN (SELECT k, COUNT(*) AS n FROM hostile WHERE id < 100 GROUP BY k) a ON h.k = a.k WHERE h.id < 200 ORDER BY h.id;
SELECT a.k, h.id FROM (SELECT k, MAX(id) AS m FROM hostile GROUP BY k) a RIGHT JOIN hostile h ON a.k = h.k AND a.m > 50 WHERE h.id < 150 ORDER BY h.id;
SELECT h.id, a.c FROM hostile h JOIN (SELECT s, COUNT(*) AS c FROM hostile GROUP BY s) a ON h.s = a.s ORDER BY h.id;
SELECT h.id, a.m FROM hostile h JOIN (SELECT big, MIN(id) AS m FROM hostile GROUP BY big) a ON h.big = a.big AND h.id > a.m ORDER BY h.id;
SELECT h.id, a.ts FROM hostile h LEFT JOIN (SELECT DISTINCT ts FROM hostile WHERE id % 2 = 0) a ON h.ts = a.ts ORDER BY h.id;
SELECT COUNT(*), SUM(a.n) FROM hostile h JOIN (SELECT f, COUNT(*) AS n FROM hostile GROUP BY f) a ON h.f = a.f;
SELECT COUNT(*) FROM hostile h JOIN (SELECT k FROM hostile WHERE id < 300) a ON h.k = a.k;
SELECT h.id, a.n FROM (SELECT small, COUNT(*) AS n FROM hostile GROUP BY small) a JOIN hostile h ON a.small = h.small WHERE h.id < 120 ORDER BY h.id;
SELECT COUNT(*) FROM hostile h WHERE h.f > (SELECT AVG(g.f) FROM hostile g WHERE g.k = h.k);
