-- Every order with its payments, shipments and reviews, all on order_id: one StreamingMultiJoin
-- that keeps the input rows, where Spark's chain of three joins would keep joined rows.
CREATE STREAMING TABLE order_facts AS
SELECT o.order_id, o.customer, o.amount, p.method, p.paid, s.carrier, r.stars
FROM STREAM(orders) AS o
JOIN STREAM(payments) AS p ON p.order_id = o.order_id
JOIN STREAM(shipments) AS s ON s.order_id = p.order_id
JOIN STREAM(reviews) AS r ON r.order_id = o.order_id;
