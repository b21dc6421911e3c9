-- Each order with its payment and shipment within the hour, if any: an outer chain whose
-- every input is watermarked and bounded by intervals.
CREATE TABLE orders (order_id BIGINT, order_time TIMESTAMP(3),
  WATERMARK FOR order_time AS order_time - INTERVAL '10' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'orders');
CREATE TABLE payments (order_id BIGINT, pay_time TIMESTAMP(3),
  WATERMARK FOR pay_time AS pay_time - INTERVAL '10' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'payments');
CREATE TABLE shipments (order_id BIGINT, ship_time TIMESTAMP(3),
  WATERMARK FOR ship_time AS ship_time - INTERVAL '10' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'shipments');

SELECT o.order_id, p.pay_time, s.ship_time
FROM orders o
LEFT JOIN payments p ON p.order_id = o.order_id
  AND p.pay_time BETWEEN o.order_time AND o.order_time + INTERVAL '1' HOUR
LEFT JOIN shipments s ON s.order_id = o.order_id
  AND s.ship_time BETWEEN o.order_time AND o.order_time + INTERVAL '1' HOUR;
