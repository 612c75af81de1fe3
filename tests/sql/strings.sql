-- schema: trips
-- dictionary-coded strings: equality, order, constants outside the dictionary
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = 'Y';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = 'N';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag <> 'Y';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = 'X';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag <> 'X';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag < 'Y';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag <= 'N';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag > 'N';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag >= 'O';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag > 'Nz';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag < 'A';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag > 'Z';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = '';
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = 'y';
SELECT COUNT(*) FROM trips WHERE 'Y' = store_and_fwd_flag;
SELECT COUNT(*) FROM trips WHERE 'O' < store_and_fwd_flag;
SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = store_and_fwd_flag;
SELECT COUNT(*), AVG(trip_distance) FROM trips WHERE store_and_fwd_flag = 'Y' AND trip_distance > 2;
SELECT COUNT(store_and_fwd_flag), MIN(store_and_fwd_flag), MAX(store_and_fwd_flag) FROM trips WHERE store_and_fwd_flag = 'Y'
