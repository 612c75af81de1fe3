-- schema: hostile
-- hostile columns bamql must refuse cleanly
SELECT SUM(s) FROM hostile;
SELECT COUNT(*) FROM hostile WHERE s = k;
