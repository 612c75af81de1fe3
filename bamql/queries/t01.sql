-- taxi benchmark 1 ("billion taxi rides"; vendor_id for cab_type): trips by vendor
SELECT vendor_id, count(*) FROM trips GROUP BY vendor_id
