-- Flink's interval join docs: orders shipped within four hours of the order; two inputs.
CREATE TABLE Orders (id INT, order_time TIMESTAMP(3), WATERMARK FOR order_time AS order_time - INTERVAL '1' MINUTE)
WITH ('connector' = 'kafka', 'topic' = 'orders');
CREATE TABLE Shipments (order_id INT, ship_time TIMESTAMP(3), WATERMARK FOR ship_time AS ship_time - INTERVAL '1' MINUTE)
WITH ('connector' = 'kafka', 'topic' = 'shipments');

SELECT *
FROM Orders o, Shipments s
WHERE o.id = s.order_id
AND o.order_time BETWEEN s.ship_time - INTERVAL '4' HOUR AND s.ship_time;
