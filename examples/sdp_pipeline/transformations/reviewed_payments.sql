-- A flow of two streams: Spark's own join, which already keeps only input rows.
CREATE STREAMING TABLE reviewed_payments;

CREATE FLOW reviewed_payments_flow AS INSERT INTO reviewed_payments BY NAME
SELECT p.order_id, p.method, r.stars
FROM STREAM(payments) AS p
JOIN STREAM(reviews) AS r ON r.order_id = p.order_id;
