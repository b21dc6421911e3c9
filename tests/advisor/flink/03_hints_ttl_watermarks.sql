-- A MultiJoin job with hints and watermarks: orders, payments and shipments on order_id.
SET 'table.optimizer.multi-join.enabled' = 'false';
SET 'parallelism.default' = '4';

CREATE TABLE orders (
  order_id BIGINT,
  customer STRING,
  amount DECIMAL(10, 2),
  order_time TIMESTAMP(3),
  WATERMARK FOR order_time AS order_time - INTERVAL '5' SECOND,
  PRIMARY KEY (order_id) NOT ENFORCED
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'format' = 'avro');

CREATE TABLE payments (
  order_id BIGINT,
  paid DECIMAL(10, 2),
  pay_time TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  WATERMARK FOR pay_time AS pay_time - INTERVAL '10' SECOND
) WITH ('connector' = 'kafka', 'topic' = 'payments', 'format' = 'avro');

CREATE TABLE shipments (
  order_id BIGINT,
  carrier STRING,
  ship_time TIMESTAMP(3),
  WATERMARK FOR ship_time AS ship_time
) WITH ('connector' = 'kafka', 'topic' = 'shipments', 'format' = 'avro');

CREATE TABLE order_facts (order_id BIGINT, paid DECIMAL(10, 2), carrier STRING)
WITH ('connector' = 'print');

INSERT INTO order_facts
SELECT /*+ MULTI_JOIN(o, p, s), STATE_TTL('o' = '1d', 'p' = '12h', 's' = '90min') */
  o.order_id, p.paid, s.carrier
FROM orders AS o
JOIN payments AS p ON p.order_id = o.order_id
JOIN shipments AS s ON s.order_id = o.order_id;
