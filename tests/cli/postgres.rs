//! The history tests on both stores: a SQLite file and a real PostgreSQL database
//! (`pg.rs`). Many runners checking at once land every run with a number of its own; a
//! baseline one runner stored is found by another; migrations run once; the database's
//! password is never printed; `evals history migrate` copies a SQLite history into
//! PostgreSQL; `--history`, `EVALS_HISTORY`, `history.url` and `DATABASE_URL` choose it.

use crate::harness::Project;
use crate::pg;
use llm_evals::history::{HistoryReads, Location, PgStore, RunFilter, RunStore};

/// Each store the tests run against: the shared SQLite file (`dir` is where it goes), and
/// a new PostgreSQL database.
fn stores(dir: &std::path::Path) -> Vec<String> {
    vec![
        dir.join("shared.sqlite3").display().to_string(),
        pg::database(),
    ]
}

fn open(history: &str) -> llm_evals::history::AnyStore {
    Location::parse(history, std::path::Path::new(""))
        .open()
        .expect("open the history")
}

#[test]
fn eight_concurrent_checks_land_eight_runs_with_eight_numbers() {
    let shared = tempfile::tempdir().unwrap();
    for history in stores(shared.path()) {
        // Eight runners: eight checkouts of the suite, one history.
        let runners: Vec<Project> = (0..8).map(|_| Project::toy()).collect();
        let running: Vec<_> = runners
            .iter()
            .map(|p| {
                p.evals(&["check", "--no-autosave", "--branch", "main"])
                    .env("EVALS_HISTORY", &history)
                    .spawn()
            })
            .collect();
        for r in running {
            let d = r.wait();
            assert_eq!(d.code, 0, "{history}: {}", d.stderr);
            d.stderr_has("stored run ");
        }
        let runs = open(&history).list(&RunFilter::default()).unwrap();
        let mut numbers: Vec<i64> = runs.iter().map(|r| r.number).collect();
        numbers.sort();
        assert_eq!(numbers, (1..=8).collect::<Vec<_>>(), "{history}");
        let mut ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 8, "{history}");
        assert!(
            runs.iter()
                .all(|r| r.status == llm_evals::results::RunStatus::Completed && r.cases == 16)
        );
    }
}

#[test]
fn a_baseline_one_runner_stored_is_found_by_another() {
    let shared = tempfile::tempdir().unwrap();
    for history in stores(shared.path()) {
        let (one, other) = (Project::toy(), Project::toy());
        one.evals(&[
            "check",
            "--no-autosave",
            "--branch",
            "main",
            "--history",
            &history,
        ])
        .ok();
        let d = other
            .evals(&[
                "check",
                "--no-autosave",
                "--branch",
                "feature",
                "--baseline",
                "main",
                "--json",
                "run.json",
            ])
            .arg("--history")
            .arg(&history)
            .ok();
        d.stderr_has("evals check passed in toy (main → feature)");
        let main = open(&history)
            .list(&RunFilter {
                branch: Some("main".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(main.len(), 1);
        let json: serde_json::Value = serde_json::from_str(&other.read("run.json")).unwrap();
        assert_eq!(
            json["comparison"]["baseline"]["id"].as_str(),
            Some(main[0].id.as_str()),
            "{history}: {json:#}"
        );
        // A runner with a history of its own has no baseline on main.
        let alone = Project::toy();
        alone
            .evals(&[
                "check",
                "--no-autosave",
                "--branch",
                "feature",
                "--baseline",
                "main",
            ])
            .code(2);
    }
}

#[test]
fn migrations_are_applied_once_however_many_open_at_once() {
    let url = pg::database();
    let opened: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| s.spawn(|| PgStore::open(&url).expect("open").migrated()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(opened.iter().sum::<usize>(), 4, "{opened:?}");
    assert_eq!(PgStore::open(&url).unwrap().migrated(), 0);
    let mut c = pg::connect(&url);
    let versions: Vec<(i32, String)> = c
        .query(
            "SELECT version, name FROM evals_migrations ORDER BY version",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        versions,
        [
            (1, "0001_init".to_string()),
            (2, "0002_run_numbers".to_string()),
            (3, "0003_run_snapshots".to_string()),
            (4, "0004_read_indexes".to_string())
        ]
    );
    // The JSON columns are jsonb (the snapshot json, kept as written).
    let types: Vec<(String, String)> = c
        .query(
            "SELECT column_name::text, data_type::text FROM information_schema.columns
             WHERE table_name IN ('runs', 'run_snapshots')
               AND column_name IN ('argv', 'settings', 'snapshot') ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        types,
        [
            ("argv".to_string(), "jsonb".to_string()),
            ("settings".to_string(), "jsonb".to_string()),
            ("snapshot".to_string(), "json".to_string())
        ]
    );
}

#[test]
fn a_run_reads_back_as_stored_and_is_never_rewritten() {
    let url = pg::database();
    let p = Project::toy();
    p.evals(&[
        "check",
        "--no-autosave",
        "--json",
        "run.json",
        "--history",
        &url,
    ])
    .ok();
    let mut h = PgStore::open(&url).unwrap();
    let stored = &h.list(&RunFilter::default()).unwrap()[0];
    let exported = p.evals(&["export", &stored.id, "--history", &url]).ok();
    let run: llm_evals::results::RunResult = serde_json::from_str(&exported.stdout).unwrap();
    assert_eq!(h.get(&stored.id).unwrap().as_ref(), Some(&run));
    assert_eq!(h.find("1").unwrap().as_deref(), Some(stored.id.as_str()));
    assert_eq!(
        h.find(&stored.id[..8]).unwrap().as_deref(),
        Some(stored.id.as_str())
    );
    // The same id again is refused, and nothing of it lands.
    let err = h
        .insert(&run)
        .expect_err("a second run under the id")
        .to_string();
    assert!(err.contains("duplicate key"), "{err}");
    assert_eq!(h.list(&RunFilter::default()).unwrap().len(), 1);
    let mut c = pg::connect(&url);
    let cases: i64 = c
        .query_one("SELECT COUNT(*) FROM case_results", &[])
        .unwrap()
        .get(0);
    assert_eq!(cases, 16);
}

#[test]
fn the_password_is_never_printed() {
    let url = pg::database();
    let secret = pg::password(&url);
    let shown = url.replace(&format!(":{secret}@"), "@");
    let p = Project::toy();
    let d = p
        .evals(&["check", "-v", "--no-autosave", "--history", &url])
        .ok();
    d.stderr_has(&format!("verbose: history: {shown} (--history)"));
    d.stderr_has(&format!(" in {shown}\n"));
    for text in [&d.stdout, &d.stderr] {
        assert!(!text.contains(&secret), "{text}");
    }
    // A wrong password: the server refuses it, and the message names neither.
    let wrong = url.replace(&secret, "not-the-password-42");
    let d = p.evals(&["history", "--history", &wrong]).exact().code(1);
    d.stderr_is(&format!(
        "error: {shown}: history store: password authentication failed for user \"evals\"; check the server is up, the URL and its credentials, or pass --history with another store\n"
    ));
    // A run that cannot store says so without it, and its snapshot holds no password.
    let d = p
        .evals(&["check", "--json", "run.json", "--history", &wrong])
        .ok();
    d.stderr_has(&format!(
        "warning: could not store the run in the history: {shown}: history store: password authentication failed"
    ));
    for text in [&d.stdout, &d.stderr, &p.read("run.json")] {
        assert!(!text.contains("not-the-password-42"), "{text}");
    }
    // The stored run's argv (which had the URL) is scrubbed too.
    let stored = open(&url).list(&RunFilter::default()).unwrap();
    let run = open(&url).get(&stored[0].id).unwrap().unwrap();
    assert!(
        !serde_json::to_string(&run).unwrap().contains(&secret),
        "{:?}",
        run.run.argv
    );
}

#[test]
fn migrate_copies_a_sqlite_history_with_its_ids_and_numbers_once() {
    let p = Project::toy();
    for branch in ["main", "feature", "main"] {
        p.evals(&["check", "--no-autosave", "--branch", branch])
            .ok();
    }
    let url = pg::database();
    let shown = url.replace(&format!(":{}@", pg::password(&url)), "@");
    let d = p.evals(&["history", "migrate", "--to", &url]).exact().ok();
    d.stderr_is(&format!(
        "suite: toy (evals/.llm-evals.config.yml)\ncopied 3 runs from {} into {shown}\n",
        p.path().join(".evals/history.sqlite3").display()
    ));
    let d = p.evals(&["history", "migrate", "--to", &url]).ok();
    d.stderr_has("copied 0 runs from ");
    d.stderr_has(" (3 already there)");
    let sqlite = open(
        &p.path()
            .join(".evals/history.sqlite3")
            .display()
            .to_string(),
    );
    let postgres = open(&url);
    let listed = |h: &llm_evals::history::AnyStore| -> Vec<(i64, String, Option<String>)> {
        h.list(&RunFilter::default())
            .unwrap()
            .into_iter()
            .map(|r| (r.number, r.id, r.branch))
            .collect()
    };
    assert_eq!(listed(&sqlite), listed(&postgres));
    for (_, id, _) in listed(&sqlite) {
        assert_eq!(sqlite.get(&id).unwrap(), postgres.get(&id).unwrap());
    }
    // A new run on the database takes the next number, and finds its baseline there.
    p.evals(&[
        "check",
        "--no-autosave",
        "--branch",
        "feature",
        "--baseline",
        "main",
    ])
    .env("EVALS_HISTORY", &url)
    .ok()
    .stderr_has("(main → feature)");
    assert_eq!(postgres.list(&RunFilter::default()).unwrap()[0].number, 4);
    p.evals(&["history", "migrate", "--to", "elsewhere.sqlite3"])
        .code(2)
        .stderr_has("--to elsewhere.sqlite3: not a database URL; pass --to postgres://user@host:port/db or --to mysql://user@host:port/db");
}

#[test]
fn the_history_is_chosen_by_flag_then_env_then_config_then_database_url() {
    let (config_db, env_db) = (pg::database(), pg::database());
    let p = Project::toy();
    let cfg = "evals/.llm-evals.config.yml";
    let original = p.read(cfg);
    p.write(cfg, &format!("{original}\nhistory:\n  url: {config_db}\n"));
    let count = |url: &str| open(url).list(&RunFilter::default()).unwrap().len();
    // The config's history.url over DATABASE_URL.
    p.evals(&["check", "--no-autosave", "-v"])
        .env("DATABASE_URL", &env_db)
        .ok()
        .stderr_has("(history.url in the config)");
    assert_eq!((count(&config_db), count(&env_db)), (1, 0));
    // EVALS_HISTORY over the config; --history over EVALS_HISTORY.
    p.evals(&["check", "--no-autosave"])
        .env("EVALS_HISTORY", &env_db)
        .ok();
    assert_eq!((count(&config_db), count(&env_db)), (1, 1));
    p.evals(&["check", "--no-autosave", "--history", &config_db])
        .env("EVALS_HISTORY", &env_db)
        .ok();
    assert_eq!((count(&config_db), count(&env_db)), (2, 1));
    // Without the config's, DATABASE_URL; `evals history` reads the same.
    p.write(cfg, &original);
    p.evals(&["check", "--no-autosave", "-v"])
        .env("DATABASE_URL", &env_db)
        .ok()
        .stderr_has("(DATABASE_URL)");
    assert_eq!((count(&config_db), count(&env_db)), (2, 2));
    p.evals(&["history", "--json"])
        .env("DATABASE_URL", &env_db)
        .ok()
        .stdout_has("\"number\": 2");
    // A DATABASE_URL that is no database URL of a store is not a history.
    p.evals(&["check", "--no-autosave"])
        .env("DATABASE_URL", "redis://u@h/0")
        .ok()
        .stderr_has("stored run ");
    assert!(p.path().join(".evals/history.sqlite3").is_file());
}

#[test]
fn sslmode_require_talks_tls_and_verifies_the_certificate() {
    let url = format!("{}?sslmode=require", pg::database());
    let p = Project::toy();
    // The server's certificate is self-signed: trusted through SSL_CERT_FILE, the run lands.
    p.evals(&["check", "--no-autosave", "--history", &url])
        .env("SSL_CERT_FILE", &pg::ca().display().to_string())
        .ok()
        .stderr_has("stored run ");
    let plain = url.trim_end_matches("?sslmode=require");
    assert_eq!(open(plain).list(&RunFilter::default()).unwrap().len(), 1);
    // Not trusted: refused, the certificate named as the reason.
    let d = p
        .evals(&["history", "--history", &url])
        .env("SSL_CERT_FILE", "/nonexistent/ca.pem")
        .code(1);
    d.stderr_has("history store: error performing TLS handshake");
    d.stderr_has("certificate");
}

#[test]
fn the_baseline_rule_find_and_list_are_the_same_on_both_stores() {
    // One real run, stored again under the ids, branches and times each rule needs.
    let p = Project::toy();
    p.evals(&["check", "--no-autosave", "--json", "run.json"])
        .ok();
    let template: llm_evals::results::RunResult =
        serde_json::from_str(&p.read("run.json")).unwrap();
    let at = |id: &str, branch: &str, started: &str| {
        let mut r = template.clone();
        r.run.id = id.into();
        r.run.branch = Some(branch.into());
        r.run.started_at = started.parse().expect("a time");
        r
    };
    let shared = tempfile::tempdir().unwrap();
    let mut answers = Vec::new();
    for history in stores(shared.path()) {
        let mut h = open(&history);
        for (id, branch, started) in [
            ("0198aa-1111", "main", "2026-01-01T00:00:00Z"),
            ("0198aa-2222", "main", "2026-01-03T00:00:00Z"),
            ("0198bb-3333", "feature", "2026-01-02T00:00:00Z"),
            ("0199-b", "main", "2026-01-05T00:00:00Z"),
            ("0199-d", "main", "2026-01-05T00:00:00Z"),
        ] {
            h.insert(&at(id, branch, started)).unwrap();
        }
        let mut stopped = at("0199-a", "main", "2026-01-05T00:00:00Z");
        stopped.run.status = llm_evals::results::RunStatus::Interrupted;
        h.insert(&stopped).unwrap();
        let suite = template.run.suite.as_str();
        let candidates = |before: &str, exclude: &str| -> Vec<String> {
            h.runs_on_branch(suite, "main", before, exclude)
                .unwrap()
                .into_iter()
                .map(|b| b.id)
                .collect()
        };
        // Never a run from the future; the run itself left out; within one second the
        // later id is the future; a stopped run is no baseline.
        assert_eq!(candidates("2026-01-02T00:00:00Z", "me"), ["0198aa-1111"]);
        assert_eq!(
            candidates("2026-01-04T00:00:00Z", "0198aa-2222"),
            ["0198aa-1111"]
        );
        assert_eq!(
            candidates("2026-01-05T00:00:00Z", "0199-c"),
            ["0199-b", "0198aa-2222", "0198aa-1111"],
            "{history}"
        );
        let find = |r: &str| h.find(r).unwrap();
        assert_eq!(find("2").as_deref(), Some("0198aa-2222"));
        assert_eq!(find("#3").as_deref(), Some("0198bb-3333"));
        assert_eq!(find("0198B").as_deref(), Some("0198bb-3333"));
        assert_eq!((find("7"), find("019"), find("main")), (None, None, None));
        let ambiguous = h.find("0198a").expect_err("two runs").to_string();
        assert!(
            ambiguous.starts_with("run id prefix 0198a matches 2 runs in ")
                && ambiguous.contains("(#1 0198aa-1111, #2 0198aa-2222)"),
            "{ambiguous}"
        );
        let listed = |filter: RunFilter| -> Vec<(i64, String)> {
            h.list(&filter)
                .unwrap()
                .into_iter()
                .map(|r| (r.number, r.id))
                .collect()
        };
        let on_feature = listed(RunFilter {
            branch: Some("feature".into()),
            ..Default::default()
        });
        assert_eq!(on_feature, [(3, "0198bb-3333".to_string())]);
        let newest = listed(RunFilter {
            limit: Some(2),
            ..Default::default()
        });
        answers.push((candidates("2026-01-06T00:00:00Z", "x"), newest));
    }
    assert_eq!(answers[0], answers[1], "SQLite and PostgreSQL differ");
}

#[test]
fn the_store_works_when_called_inside_a_tokio_runtime() {
    // The sync client would panic there; the store makes its calls off the runtime.
    let url = pg::database();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let listed = rt.block_on(async {
        let h = PgStore::open(&url).expect("open inside a runtime");
        h.list(&RunFilter::default())
            .expect("list inside a runtime")
    });
    assert!(listed.is_empty());
}

/// The `host:port` of a database URL from `pg::database`.
fn authority(url: &str) -> String {
    let rest = url.split_once('@').expect("a user in the URL").1;
    rest.split(['/', '?']).next().unwrap().to_string()
}

#[test]
fn a_lock_held_past_its_wait_fails_the_store_naming_the_statement_timeout() {
    let url = pg::database();
    drop(PgStore::open(&url).expect("migrate the database first"));
    // Another runner storing a run holds the numbering lock to its commit.
    let mut holder = pg::connect(&url);
    let mut tx = holder.transaction().unwrap();
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&0x6576_616c_7302_i64])
        .unwrap();
    let p = Project::toy();
    let started = std::time::Instant::now();
    let d = p
        .evals(&[
            "check",
            "--no-autosave",
            "--history",
            &format!("{url}?statement_timeout=100ms"),
        ])
        .ok();
    // Ten statement timeouts of waiting for the lock, then the server's own error.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    d.stderr_has("warning: could not store the run in the history: ");
    d.stderr_has(
        "canceling statement due to statement timeout (the statement timeout is 100 ms, statement_timeout in the URL: allow longer with ?statement_timeout=60s in the URL, or EVALS_PG_STATEMENT_TIMEOUT)",
    );
    tx.rollback().unwrap();
    assert_eq!(
        open(&url).list(&RunFilter::default()).unwrap().len(),
        0,
        "nothing half-stored"
    );
}

/// A loopback relay to `upstream` that can be frozen: while frozen it holds every byte,
/// both ways, and keeps the connections open (a server gone silent mid-session).
struct Relay {
    port: u16,
    frozen: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Relay {
    fn start(upstream: String) -> Relay {
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let frozen = std::sync::Arc::new(AtomicBool::new(false));
        let f = frozen.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = std::net::TcpStream::connect(&upstream) else {
                    continue;
                };
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let f = f.clone();
                    std::thread::spawn(move || {
                        use std::io::{Read, Write};
                        let mut buf = [0u8; 16384];
                        while let Ok(n) = from.read(&mut buf) {
                            if n == 0 {
                                break;
                            }
                            while f.load(Ordering::SeqCst) {
                                std::thread::sleep(std::time::Duration::from_millis(10));
                            }
                            if to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Relay { port, frozen }
    }

    fn freeze(&self, on: bool) {
        self.frozen.store(on, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn a_server_gone_silent_mid_session_is_an_error_after_its_statement_timeout_and_grace() {
    let url = pg::database();
    let upstream = authority(&url);
    let relay = Relay::start(upstream.clone());
    let via = format!(
        "{}?statement_timeout=500ms",
        url.replace(&upstream, &format!("127.0.0.1:{}", relay.port))
    );
    let store = PgStore::open(&via).expect("open through the relay");
    relay.freeze(true);
    let started = std::time::Instant::now();
    let e = store.find("1").expect_err("no answer").to_string();
    let took = started.elapsed();
    // The server never sees the query, so only the client's own deadline ends the wait:
    // the statement timeout and 5 s of grace.
    assert!(
        took >= std::time::Duration::from_millis(5400) && took < std::time::Duration::from_secs(9),
        "{took:?}: {e}"
    );
    assert!(
        e.contains(&format!(
            "history store: no answer from 127.0.0.1:{} within 5.5 s to a statement (the statement timeout is 500 ms, statement_timeout in the URL): the server is hung or the network dropped; check the server, or allow longer with ?statement_timeout=60s in the URL (or EVALS_PG_STATEMENT_TIMEOUT)",
            relay.port
        )),
        "{e}"
    );
    // The silent connection was dropped: the next call connects again.
    relay.freeze(false);
    assert_eq!(store.find("1").expect("answered again"), None);
}
