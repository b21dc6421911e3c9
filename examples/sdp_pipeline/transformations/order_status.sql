-- Each order with its payment within an hour and its shipment within two days, if any: LEFT OUTER
-- joins bounded in event time, one StreamingMultiJoin that evicts rows as the watermark passes.
CREATE STREAMING TABLE order_status AS
SELECT o.order_id, o.order_time, p.pay_time, s.ship_time
FROM STREAM(orders) WATERMARK order_time DELAY OF INTERVAL 1 HOUR AS o
LEFT JOIN STREAM(payments) WATERMARK pay_time DELAY OF INTERVAL 1 HOUR AS p
  ON p.order_id = o.order_id
  AND p.pay_time BETWEEN o.order_time AND o.order_time + INTERVAL 1 HOUR
LEFT JOIN STREAM(shipments) WATERMARK ship_time DELAY OF INTERVAL 1 HOUR AS s
  ON s.order_id = o.order_id
  AND s.ship_time BETWEEN o.order_time AND o.order_time + INTERVAL 2 DAYS;
