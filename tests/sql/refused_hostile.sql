-- schema: hostile
-- hostile columns bamql must refuse cleanly
SELECT SUM(s) FROM hostile;
SELECT COUNT(*) FROM hostile WHERE s = k;
SELECT COUNT(DISTINCT big) FROM hostile;
SELECT k, COUNT(DISTINCT mid), COUNT(*) FROM hostile GROUP BY k
;
