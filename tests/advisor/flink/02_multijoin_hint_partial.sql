-- The conf off: the MULTI_JOIN hint picks three of four inputs (Flink's "partial match").
SET 'table.optimizer.multi-join.enabled' = 'false';

CREATE TABLE t1 (id BIGINT, name STRING, age INT) WITH ('connector' = 'datagen');
CREATE TABLE t2 (id BIGINT, name STRING, age INT) WITH ('connector' = 'datagen');
CREATE TABLE t3 (id BIGINT, name STRING, age INT) WITH ('connector' = 'datagen');
CREATE TABLE t4 (id BIGINT, name STRING, age INT) WITH ('connector' = 'datagen');

SELECT /*+ MULTI_JOIN(t1, t2, t3) */ *
FROM t1
JOIN t2 ON t1.id = t2.id
JOIN t3 ON t1.id = t3.id
JOIN t4 ON t1.id = t4.id;
