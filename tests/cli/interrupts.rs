//! No network wait is unbounded, and Ctrl-C always works: the real binary against a loopback
//! server that accepts every connection and never says a word (a hung database, a hung
//! API). A PostgreSQL history behind it is an error within its connect timeout, naming the
//! server, the timeout and the key that changes it; SIGINT or SIGTERM ends a command
//! blocked on it (or on the GitHub API) within 2 s, exit 130.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::harness::Project;

/// A loopback server that accepts every connection, holds it open and never writes.
struct Silent {
    port: u16,
    accepted: Arc<AtomicUsize>,
    /// When the first connection came.
    first: Arc<Mutex<Option<Instant>>>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let first = Arc::new(Mutex::new(None));
        let (n, at) = (accepted.clone(), first.clone());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                at.lock().unwrap().get_or_insert_with(Instant::now);
                n.fetch_add(1, Ordering::SeqCst);
                // Read what comes (so the client's writes never block), answer nothing.
                let mut s = stream.try_clone().expect("clone the stream");
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
                });
                held.push(stream);
            }
        });
        Silent {
            port,
            accepted,
            first,
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Waits until a client connected (the command is now blocked on this server).
    fn wait_for_a_client(&self) -> Instant {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(at) = *self.first.lock().unwrap() {
                return at;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!(
            "nothing connected to the silent server on port {}",
            self.port
        );
    }
}

/// Sends `signal` (`INT`, `TERM`) to the process.
fn send(child: &Child, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {}", child.id());
}

/// The exit code and stderr of `child` once it ends, and how long that took; a child still
/// running after `limit` is killed and the test fails (it never hangs).
fn ended_within(mut child: Child, limit: Duration) -> (Option<i32>, String, Duration) {
    let start = Instant::now();
    let mut stderr = child.stderr.take().expect("stderr piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let took = start.elapsed();
            return (status.code(), reader.join().unwrap(), took);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "still running {limit:?} after the signal; stderr:\n{}",
                reader.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `evals check` on the toy suite, its history at `url` (the baseline `main` is read from it).
fn check_with_history(url: &str) -> (Project, Child) {
    let p = Project::toy();
    let args = [
        "check",
        "--no-autosave",
        "--baseline",
        "main",
        "--history",
        url,
    ];
    let child = spawned(&p, &args, &[]);
    (p, child)
}

fn spawned(p: &Project, args: &[&str], env: &[(&str, &str)]) -> Child {
    let mut run = p.evals(args);
    for (k, v) in env {
        run = run.env(k, v);
    }
    run.into_command()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn evals")
}

#[test]
fn a_history_server_that_never_answers_is_a_clear_error_within_its_connect_timeout() {
    let db = Silent::start();
    let url = format!(
        "postgres://u:hushhush@127.0.0.1:{}/db?connect_timeout=2",
        db.port
    );
    let (_p, child) = check_with_history(&url);
    // The run replays first; from its first connection on, the server gets 2 s.
    let (code, stderr, _) = ended_within(child, Duration::from_secs(60));
    let asked = db.wait_for_a_client().elapsed();
    assert_eq!(code, Some(2), "no usable baseline: exit 2\n{stderr}");
    assert!(
        asked >= Duration::from_millis(1900) && asked < Duration::from_secs(4),
        "ended {asked:?} after it connected, not about 2 s\n{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "postgres://u@127.0.0.1:{port}/db?connect_timeout=2: history store: no answer from 127.0.0.1:{port} within 2 s of connecting (the connect timeout, connect_timeout in the URL): the server accepts connections but says nothing (not PostgreSQL, or hung); check the URL's host and port, or allow longer with ?connect_timeout=SECONDS in the URL (or PGCONNECT_TIMEOUT)",
            port = db.port
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("hushhush"), "{stderr}");
    // Storing the run and finding its baseline both need the server: it is asked once.
    assert_eq!(db.accepted(), 1, "{stderr}");
}

/// `evals check` blocked connecting to a silent history (its default 10 s connect timeout),
/// then `signal`: exit 130 within 2 s.
fn a_check_blocked_on_a_silent_history_ends_on(signal: &str) {
    let db = Silent::start();
    let url = format!("postgres://u:pw@127.0.0.1:{}/db", db.port);
    let (_p, child) = check_with_history(&url);
    db.wait_for_a_client();
    std::thread::sleep(Duration::from_millis(300));
    send(&child, signal);
    let (code, stderr, took) = ended_within(child, Duration::from_secs(20));
    assert_eq!(code, Some(130), "SIG{signal}\n{stderr}");
    assert!(
        took <= Duration::from_secs(2),
        "SIG{signal}: took {took:?}\n{stderr}"
    );
    assert!(stderr.contains("interrupted"), "{stderr}");
}

#[test]
fn ctrl_c_ends_a_check_blocked_on_a_silent_history_with_130_within_2_s() {
    a_check_blocked_on_a_silent_history_ends_on("INT");
}

#[test]
fn sigterm_ends_a_check_blocked_on_a_silent_history_with_130_within_2_s() {
    a_check_blocked_on_a_silent_history_ends_on("TERM");
}

#[test]
fn ctrl_c_ends_a_comment_blocked_on_a_silent_github_api_with_130_within_2_s() {
    let api = Silent::start();
    let p = Project::new().file("comment.md", "**evals check passed**\n");
    let uri = format!("http://127.0.0.1:{}", api.port);
    let child = spawned(
        &p,
        &["comment", "comment.md", "--pr", "7"],
        &[
            ("GITHUB_TOKEN", "ghs_0123456789abcdefghijABCDEFGHIJ012345"),
            ("GITHUB_REPOSITORY", "acme/app"),
            ("GITHUB_API_URL", &uri),
        ],
    );
    api.wait_for_a_client();
    std::thread::sleep(Duration::from_millis(300));
    send(&child, "INT");
    let (code, stderr, took) = ended_within(child, Duration::from_secs(40));
    assert_eq!(code, Some(130), "{stderr}");
    assert!(took <= Duration::from_secs(2), "took {took:?}\n{stderr}");
}

#[test]
fn a_second_ctrl_c_ends_a_blocked_command_at_once() {
    let db = Silent::start();
    let (_p, child) = check_with_history(&format!("postgres://u:pw@127.0.0.1:{}/db", db.port));
    db.wait_for_a_client();
    std::thread::sleep(Duration::from_millis(300));
    send(&child, "INT");
    std::thread::sleep(Duration::from_millis(100));
    send(&child, "INT");
    // Well before the 1.5 s the first one allows.
    let (code, stderr, took) = ended_within(child, Duration::from_secs(20));
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        took < Duration::from_millis(1000),
        "took {took:?}\n{stderr}"
    );
}

#[test]
fn ctrl_c_ends_a_run_blocked_on_a_silent_tracker_with_130_within_2_s() {
    // The run is replayed and stored; its traces then go to an OTLP server that never answers.
    let collector = Silent::start();
    let p = Project::toy();
    let endpoint = format!("http://127.0.0.1:{}", collector.port);
    let child = spawned(
        &p,
        &[
            "compare",
            "--cassettes",
            "replay",
            "--no-autosave",
            "--tracker",
            "otlp",
        ],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    );
    collector.wait_for_a_client();
    std::thread::sleep(Duration::from_millis(300));
    send(&child, "INT");
    let (code, stderr, took) = ended_within(child, Duration::from_secs(40));
    assert_eq!(code, Some(130), "{stderr}");
    assert!(took <= Duration::from_secs(2), "took {took:?}\n{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
}
