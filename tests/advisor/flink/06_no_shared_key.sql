-- Must not fuse: a joins b on k, b joins c on j; no key is shared by three inputs.
CREATE TABLE a (k BIGINT, v STRING) WITH ('connector' = 'kafka', 'topic' = 'a');
CREATE TABLE b (k BIGINT, j BIGINT) WITH ('connector' = 'kafka', 'topic' = 'b');
CREATE TABLE c (j BIGINT, w STRING) WITH ('connector' = 'kafka', 'topic' = 'c');
CREATE TEMPORARY FUNCTION clean AS 'com.example.Clean';

SELECT a.v, c.w
FROM a
JOIN b ON a.k = b.k
JOIN c ON c.j = b.j;
