-- 0002: every run gets a number, 1, 2, 3 in the order runs were stored, so a command line
-- can say `evals report 3 --baseline 2`. Runs already stored are numbered by when they
-- started (ties by their time-ordered id); a new run takes the next number as it is
-- inserted, inside the insert's immediate transaction.
ALTER TABLE runs ADD COLUMN number INTEGER;
UPDATE runs SET number = (
    SELECT n FROM (
        SELECT id AS run_id, ROW_NUMBER() OVER (ORDER BY started_at, id) AS n FROM runs
    ) WHERE run_id = runs.id
);
CREATE UNIQUE INDEX runs_by_number ON runs (number);
