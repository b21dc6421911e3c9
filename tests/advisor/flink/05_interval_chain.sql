-- Three interval joins on one key, every input watermarked: each bounded by the others.
CREATE TABLE clicks (user_id BIGINT, url STRING, click_time TIMESTAMP(3),
  WATERMARK FOR click_time AS click_time - INTERVAL '5' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'clicks');
CREATE TABLE views (user_id BIGINT, page STRING, view_time TIMESTAMP(3),
  WATERMARK FOR view_time AS view_time - INTERVAL '5' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'views');
CREATE TABLE buys (user_id BIGINT, item STRING, buy_time TIMESTAMP(3),
  WATERMARK FOR buy_time AS buy_time - INTERVAL '5' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'buys');

SELECT c.user_id, c.url, v.page, b.item
FROM clicks c
JOIN views v ON v.user_id = c.user_id
  AND v.view_time BETWEEN c.click_time - INTERVAL '1' HOUR AND c.click_time + INTERVAL '1' HOUR
JOIN buys b ON b.user_id = v.user_id
  AND b.buy_time BETWEEN v.view_time AND v.view_time + INTERVAL '30' MINUTE;
