-- The shape of Flink's MultiJoin docs: four streams joined on user_id, the conf on.
SET 'table.optimizer.multi-join.enabled' = 'true';

CREATE TABLE Users (user_id STRING, name STRING, cash INT) WITH ('connector' = 'kafka', 'topic' = 'users', 'format' = 'json');
CREATE TABLE Orders (order_id STRING, user_id STRING, product STRING) WITH ('connector' = 'kafka', 'topic' = 'orders', 'format' = 'json');
CREATE TABLE Payments (payment_id STRING, user_id STRING, price INT) WITH ('connector' = 'kafka', 'topic' = 'payments', 'format' = 'json');
CREATE TABLE Shipments (location STRING, user_id STRING) WITH ('connector' = 'kafka', 'topic' = 'shipments', 'format' = 'json');

SELECT u.user_id, u.name, o.order_id, p.payment_id, s.location
FROM Users AS u
JOIN Orders AS o ON o.user_id = u.user_id
JOIN Payments AS p ON p.user_id = u.user_id
JOIN Shipments AS s ON s.user_id = p.user_id;
