-- A filesystem table with directory watching is a stream; in batch mode nothing is.
CREATE TABLE events (id BIGINT, v STRING) WITH ('connector' = 'filesystem', 'path' = '/data/events', 'format' = 'json', 'source.monitor-interval' = '10s');
CREATE TABLE labels (id BIGINT, label STRING) WITH ('connector' = 'filesystem', 'path' = '/data/labels', 'format' = 'json');
CREATE TABLE notes (id BIGINT, note STRING) WITH ('connector' = 'kafka', 'topic' = 'notes');
CREATE TABLE extra (id BIGINT, x STRING) WITH ('connector' = 'kafka', 'topic' = 'extra');

SELECT * FROM events e JOIN labels l ON l.id = e.id JOIN notes n ON n.id = e.id JOIN extra x ON x.id = n.id;

SET 'execution.runtime-mode' = 'batch';

SELECT * FROM events e JOIN notes n ON n.id = e.id JOIN extra x ON x.id = n.id;
