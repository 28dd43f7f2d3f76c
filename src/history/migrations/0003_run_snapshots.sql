-- 0003: a run's snapshot in a table of its own, as its last column. The snapshot is written
-- in place through SQLite's incremental blob I/O into a zeroblob the insert reserves; in
-- `runs`, as a TEXT column before `number`, SQLite built the whole row in memory (the
-- zeroblob expanded, then copied), about twice the snapshot's size at every store. Snapshots
-- already stored move here unchanged.
CREATE TABLE run_snapshots (
    run_id   TEXT PRIMARY KEY REFERENCES runs (id),
    snapshot BLOB NOT NULL                       -- the full RunResult JSON, UTF-8
);
INSERT INTO run_snapshots (run_id, snapshot) SELECT id, CAST(snapshot AS BLOB) FROM runs;
ALTER TABLE runs DROP COLUMN snapshot;
