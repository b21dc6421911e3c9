-- Static inputs: a jdbc table, a bounded datagen table and a temporal (lookup) join; with
-- dynamic table options and a LOOKUP hint, which Spark has no use for.
CREATE TABLE orders (order_id BIGINT, currency STRING, order_time TIMESTAMP(3),
  proc AS PROCTIME())
WITH ('connector' = 'kafka', 'topic' = 'orders');
CREATE TABLE payments (order_id BIGINT, paid INT) WITH ('connector' = 'kafka', 'topic' = 'payments');
CREATE TABLE shipments (order_id BIGINT, carrier STRING) WITH ('connector' = 'kafka', 'topic' = 'shipments');
CREATE TABLE rates (currency STRING, rate DOUBLE) WITH ('connector' = 'jdbc', 'table-name' = 'rates');
CREATE TABLE promos (order_id BIGINT, promo STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '100');

SELECT /*+ LOOKUP('table'='r', 'async'='true') */ o.order_id, p.paid, s.carrier, r.rate, m.promo
FROM orders /*+ OPTIONS('scan.startup.mode'='earliest-offset') */ AS o
JOIN payments AS p ON p.order_id = o.order_id
JOIN shipments AS s ON s.order_id = o.order_id
JOIN promos AS m ON m.order_id = o.order_id
JOIN rates FOR SYSTEM_TIME AS OF o.proc AS r ON r.currency = o.currency;
