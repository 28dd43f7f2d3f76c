-- 0002 (MySQL, MariaDB): run numbers, as the SQLite 0002. A new run takes the next number
-- inside its insert's transaction, under a named lock (GET_LOCK) held to its commit, so
-- runners inserting at once get distinct numbers in the order they commit.
ALTER TABLE runs ADD COLUMN number BIGINT;
UPDATE runs r JOIN (
    SELECT id, ROW_NUMBER() OVER (ORDER BY started_at, id) AS n FROM runs
) o ON o.id = r.id SET r.number = o.n;
CREATE UNIQUE INDEX runs_by_number ON runs (number);
