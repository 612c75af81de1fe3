-- the scan of taxi benchmark 1 without its GROUP BY (the yardstick of a few-group kernel)
SELECT SUM(vendor_id), count(*) FROM trips
