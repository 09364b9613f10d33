-- Public reference tables for the snapshot (catalog `pub`): the 78 items with their
-- statement, and the succeeded builds (version checksum, parameters, timing) that
-- scores refer to. No data values.
CREATE TABLE pub.items AS
SELECT item_id, item, description, statement
FROM ref.items
ORDER BY item_id;

CREATE TABLE pub.builds AS
SELECT build_id, sql_checksum AS build_sql_version, parameters, started_at, finished_at, elapsed_s
FROM meta.builds
WHERE status = 'succeeded'
ORDER BY build_id;
