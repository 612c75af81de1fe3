-- schema: hostile
-- joins with the zone lookup on hostile keys: negative, zero, NULL, int8, int32, int64 extremes
SELECT COUNT(*) FROM hostile h JOIN zones z ON h.neg = z.LocationID;
SELECT COUNT(*), SUM(h.mid) FROM hostile h LEFT JOIN zones z ON h.neg = z.LocationID;
SELECT z.Borough, COUNT(*), SUM(h.m), MIN(h.fx), MAX(h.fx) FROM hostile h LEFT JOIN zones z ON h.neg = z.LocationID GROUP BY 1 ORDER BY 1;
SELECT COUNT(*), MIN(h.f) FROM hostile h LEFT JOIN zones z ON h.neg = z.LocationID WHERE z.Zone IS NULL;
SELECT COUNT(*) FROM hostile h LEFT JOIN zones z ON h.small = z.LocationID WHERE z.Borough = 'Queens' OR z.Borough IS NULL;
SELECT z.Borough, COUNT(*) FROM hostile h JOIN zones z ON h.small = z.LocationID GROUP BY 1 ORDER BY 1;
SELECT COUNT(*), SUM(h.big) FROM hostile h JOIN zones z ON h.big = z.LocationID;
SELECT COUNT(*) FROM hostile h LEFT JOIN zones z ON h.big = z.LocationID WHERE z.LocationID IS NULL;
SELECT z.service_zone, h.k, COUNT(*), AVG(h.w) FROM hostile h LEFT JOIN zones z ON h.k = z.LocationID GROUP BY 1, 2 ORDER BY 1, 2;
SELECT COUNT(*) FROM hostile h JOIN zones z ON h.k = z.LocationID WHERE z.Zone LIKE 'No such zone%';
SELECT a.Borough, b.Borough, COUNT(*) FROM hostile h LEFT JOIN zones a ON h.neg = a.LocationID LEFT JOIN zones b ON h.k = b.LocationID GROUP BY 1, 2 ORDER BY 1, 2;
SELECT COUNT(*), MAX(h.ts) FROM hostile h JOIN zones z ON h.neg = z.LocationID WHERE z.Borough <> 'Manhattan' AND h.s IS NOT NULL
