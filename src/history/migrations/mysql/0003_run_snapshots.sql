-- 0003 (MySQL, MariaDB): the snapshot in a table of its own, as the SQLite 0003, kept in
-- parts of at most 1 MiB in order: one value is capped by the server's max_allowed_packet
-- (16 MiB on MariaDB by default), and a run's snapshot may be larger. The parts are bytes,
-- joined and read as JSON.
CREATE TABLE run_snapshots (
    run_id VARCHAR(255) NOT NULL,
    part   INT NOT NULL,
    body   LONGBLOB NOT NULL,
    PRIMARY KEY (run_id, part),
    FOREIGN KEY (run_id) REFERENCES runs (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};
INSERT INTO run_snapshots (run_id, part, body)
    SELECT r.id, 0, r.snapshot FROM runs r
    WHERE NOT EXISTS (SELECT 1 FROM run_snapshots s WHERE s.run_id = r.id);
ALTER TABLE runs DROP COLUMN snapshot;
