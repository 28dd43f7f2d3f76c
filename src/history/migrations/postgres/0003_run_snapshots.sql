-- 0003 (PostgreSQL): the snapshot in a table of its own, as the SQLite 0003 (there for
-- SQLite's blob I/O; here it keeps `runs` rows small for the queries that scan them).
CREATE TABLE run_snapshots (
    run_id   TEXT COLLATE "C" PRIMARY KEY REFERENCES runs (id),
    snapshot JSON NOT NULL                        -- the full RunResult JSON, as written
);
INSERT INTO run_snapshots (run_id, snapshot) SELECT id, snapshot FROM runs;
ALTER TABLE runs DROP COLUMN snapshot;
