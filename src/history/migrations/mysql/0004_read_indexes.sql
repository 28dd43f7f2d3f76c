-- 0004 (MySQL, MariaDB): the readers' indexes, as the SQLite 0004: a case across runs, a
-- branch's runs in time order, every run in time order.
CREATE INDEX case_results_by_case ON case_results (`case`);
CREATE INDEX runs_by_branch_started ON runs (branch, started_at);
CREATE INDEX runs_by_started ON runs (started_at, id);
