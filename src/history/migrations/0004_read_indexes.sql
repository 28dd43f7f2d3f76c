-- 0004: indexes for the readers of a history (`evals dashboard`): one case across runs
-- (`case_results` by case id, each row to its experiment by `case_results_by_experiment`'s
-- primary key side), the runs of a branch in time order whatever the suite (a trend), and
-- every run in time order (the runs list, a date range).
CREATE INDEX case_results_by_case ON case_results ("case");
CREATE INDEX runs_by_branch_started ON runs (branch, started_at);
CREATE INDEX runs_by_started ON runs (started_at, id);
