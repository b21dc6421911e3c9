-- A batch summary of the joined stream.
CREATE MATERIALIZED VIEW customer_totals AS
SELECT customer, count(*) AS facts, sum(paid) AS paid
FROM order_facts
GROUP BY customer;
