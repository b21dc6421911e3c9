-- A view and a CTE between the tables and the chain, written to a sink.
CREATE TABLE orders (order_id BIGINT, amount INT) WITH ('connector' = 'kafka', 'topic' = 'orders');
CREATE TABLE payments (order_id BIGINT, paid INT) WITH ('connector' = 'kafka', 'topic' = 'payments');
CREATE TABLE refunds (order_id BIGINT, refunded INT) WITH ('connector' = 'kafka', 'topic' = 'refunds');
CREATE TABLE ledger (order_id BIGINT, amount INT, paid INT, refunded INT) WITH ('connector' = 'blackhole');

CREATE TEMPORARY VIEW big_orders AS SELECT order_id, amount FROM orders WHERE amount > 100;

INSERT INTO ledger
WITH paid AS (SELECT order_id, paid FROM payments WHERE paid > 0)
SELECT o.order_id, o.amount, p.paid, r.refunded
FROM big_orders o
JOIN paid p ON p.order_id = o.order_id
JOIN refunds r ON r.order_id = p.order_id;
