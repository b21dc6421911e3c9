-- Two inserts in one statement set: one chain on one key, one on no shared key.
CREATE TABLE a (k BIGINT, j BIGINT) WITH ('connector' = 'kafka', 'topic' = 'a');
CREATE TABLE b (k BIGINT, j BIGINT) WITH ('connector' = 'kafka', 'topic' = 'b');
CREATE TABLE c (k BIGINT, j BIGINT) WITH ('connector' = 'kafka', 'topic' = 'c');
CREATE TABLE out1 (k BIGINT) WITH ('connector' = 'print');
CREATE TABLE out2 (k BIGINT) WITH ('connector' = 'print');

EXECUTE STATEMENT SET
BEGIN
INSERT INTO out1 SELECT a.k FROM a JOIN b ON a.k = b.k JOIN c ON c.k = b.k;
INSERT INTO out2 SELECT a.k FROM a JOIN b ON a.k = b.k JOIN c ON c.j = a.j;
END;
