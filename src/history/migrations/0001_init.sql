-- 0001: runs, their experiments, case results and metric results.
-- A run is inserted once, in one transaction, and never rewritten.
CREATE TABLE runs (
    id                TEXT PRIMARY KEY,            -- uuid v7, time-ordered
    suite             TEXT NOT NULL,
    suite_fingerprint TEXT NOT NULL,
    branch            TEXT,
    "commit"          TEXT,
    command           TEXT NOT NULL,
    mode              TEXT NOT NULL,
    argv              TEXT NOT NULL,               -- JSON array
    settings          TEXT NOT NULL,               -- JSON object
    started_at        TEXT NOT NULL,               -- RFC 3339, UTC
    finished_at       TEXT,
    status            TEXT NOT NULL,               -- completed, interrupted, aborted
    snapshot          TEXT NOT NULL                -- the full RunResult JSON
);
CREATE INDEX runs_by_branch ON runs (suite, branch, started_at);

CREATE TABLE experiments (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs (id),
    contender   TEXT NOT NULL,                     -- ContenderInfo::key()
    dataset     TEXT NOT NULL,
    score       REAL,
    cases_total INTEGER NOT NULL,
    errors      INTEGER NOT NULL,
    failed      INTEGER NOT NULL,
    cost_usd    REAL
);
CREATE INDEX experiments_by_run ON experiments (run_id);

CREATE TABLE case_results (
    id            INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments (id),
    "case"        TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    score         REAL,
    passed        INTEGER,
    error         TEXT
);
CREATE INDEX case_results_by_experiment ON case_results (experiment_id);

CREATE TABLE metric_results (
    case_result_id INTEGER NOT NULL REFERENCES case_results (id),
    metric         TEXT NOT NULL,
    value          REAL,
    PRIMARY KEY (case_result_id, metric)
);
