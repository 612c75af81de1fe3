-- schema: hostile
-- hostile columns bamql must refuse cleanly
SELECT big, COUNT(*) FROM hostile GROUP BY big;
SELECT mid, COUNT(*) FROM hostile GROUP BY mid;
SELECT f, COUNT(*) FROM hostile GROUP BY f;
SELECT ts, COUNT(*) FROM hostile GROUP BY ts;
SELECT SUM(s) FROM hostile;
SELECT COUNT(*) FROM hostile WHERE s = k;
SELECT COUNT(DISTINCT big) FROM hostile;
SELECT k, COUNT(DISTINCT mid), COUNT(*) FROM hostile GROUP BY k
