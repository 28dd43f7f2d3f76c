-- 0002 (PostgreSQL): run numbers, as the SQLite 0002. A new run takes the next number inside
-- its insert's transaction, under an advisory lock held to its commit, so runners inserting
-- at once get distinct numbers in the order they commit.
ALTER TABLE runs ADD COLUMN number BIGINT;
UPDATE runs SET number = o.n FROM (
    SELECT id AS run_id, ROW_NUMBER() OVER (ORDER BY started_at, id) AS n FROM runs
) o WHERE o.run_id = runs.id;
CREATE UNIQUE INDEX runs_by_number ON runs (number);
