-- 0001 (MySQL, MariaDB): the tables of the SQLite 0001, column for column. Text keys are
-- VARCHAR in a binary collation without padding ({collation}: utf8mb4_0900_bin on MySQL 8,
-- utf8mb4_nopad_bin on MariaDB), so ids, suites and branches compare exactly (case and
-- trailing spaces count) and order byte-wise, as SQLite's do; argv and settings are JSON
-- (on MariaDB, LONGTEXT with a JSON_VALID check); the snapshot is the text as written.
CREATE TABLE runs (
    id                VARCHAR(255) NOT NULL PRIMARY KEY,
    suite             VARCHAR(255) NOT NULL,
    suite_fingerprint VARCHAR(255) NOT NULL,
    branch            VARCHAR(255),
    `commit`          VARCHAR(255),
    command           VARCHAR(64) NOT NULL,
    mode              VARCHAR(64) NOT NULL,
    argv              JSON NOT NULL,
    settings          JSON NOT NULL,
    started_at        VARCHAR(64) NOT NULL,
    finished_at       VARCHAR(64),
    status            VARCHAR(64) NOT NULL,
    snapshot          LONGTEXT NOT NULL,
    INDEX runs_by_branch (suite, branch, started_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE experiments (
    id          BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    run_id      VARCHAR(255) NOT NULL,
    contender   TEXT NOT NULL,
    dataset     TEXT NOT NULL,
    score       DOUBLE,
    cases_total BIGINT NOT NULL,
    errors      BIGINT NOT NULL,
    failed      BIGINT NOT NULL,
    cost_usd    DOUBLE,
    INDEX experiments_by_run (run_id),
    FOREIGN KEY (run_id) REFERENCES runs (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE case_results (
    id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    experiment_id BIGINT NOT NULL,
    `case`        VARCHAR(512) NOT NULL,
    fingerprint   VARCHAR(255) NOT NULL,
    score         DOUBLE,
    passed        BOOLEAN,
    error         MEDIUMTEXT,
    INDEX case_results_by_experiment (experiment_id),
    FOREIGN KEY (experiment_id) REFERENCES experiments (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE metric_results (
    case_result_id BIGINT NOT NULL,
    metric         VARCHAR(255) NOT NULL,
    value          DOUBLE,
    PRIMARY KEY (case_result_id, metric),
    FOREIGN KEY (case_result_id) REFERENCES case_results (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};
