//! A real MariaDB (or MySQL) server for the history tests, and a fresh database on it per
//! test. `.ci/run` starts a throwaway instance and exports its URL as
//! `EVALS_TEST_MYSQL_URL` (a user with every privilege and a password, on a loopback port,
//! without a database) and its CA as `EVALS_TEST_MYSQL_CA`; a bare `cargo test` starts one
//! here, once per test binary, the same way: `mariadb-install-db` into a temp folder,
//! `mariadbd` on a free loopback port with TLS (a throwaway CA) and a password user made by
//! its init file, as the `mysql` user when the tests run as root. That server is the child
//! of a thread that lives as long as the tests, and is killed when they end (the
//! parent-death signal), leaving its folder to the next run to clear. Without
//! `mariadbd` the tests fail, saying to install Debian's `mariadb-server`. The tests' own
//! look at the tables goes through the server's command-line client (`mariadb`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::harness::Bounded;

struct Server {
    /// The user's URL, without a database (`mysql://user:pw@host:port`).
    url: String,
    /// The CA that signed the server's certificate.
    ca: PathBuf,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| match std::env::var("EVALS_TEST_MYSQL_URL") {
        Ok(url) => Server {
            url: url.trim_end_matches('/').to_string(),
            ca: std::env::var_os("EVALS_TEST_MYSQL_CA")
                .map(PathBuf::from)
                .expect("EVALS_TEST_MYSQL_URL comes with EVALS_TEST_MYSQL_CA (the server's CA certificate): run .ci/run"),
        },
        Err(_) => start(),
    })
}

/// The CA certificate that signed the test server's (for `ssl-ca=`).
pub fn ca() -> PathBuf {
    server().ca.clone()
}

/// A new, empty database on the test server: its URL, password included.
pub fn database() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "evals_test_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    let base = server().url.as_str();
    sql(base, &format!("CREATE DATABASE {name}"));
    format!("{base}/{name}")
}

/// The password in a URL from [`database`].
pub fn password(url: &str) -> String {
    let info = url.split("://").nth(1).unwrap().split('@').next().unwrap();
    info.split_once(':').unwrap().1.to_string()
}

/// The URL without its password, as evals shows it.
pub fn shown(url: &str) -> String {
    url.replace(&format!(":{}@", password(url)), "@")
}

/// What `statements` print through the server's client on `url` (its database, if it
/// names one): tab-separated rows, no header. Fails the test on an error.
pub fn sql(url: &str, statements: &str) -> String {
    let out = client(url, statements)
        .output_within(Duration::from_secs(60))
        .expect("run the mariadb client");
    assert!(
        out.status.success(),
        "{statements}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The server's client, connected to `url` over TCP, running `statements`.
pub fn client(url: &str, statements: &str) -> Command {
    let rest = url.split_once("://").unwrap().1;
    let (info, after) = rest.split_once('@').unwrap();
    let (user, pw) = info.split_once(':').unwrap();
    let (hostport, db) = after.split_once('/').unwrap_or((after, ""));
    let (host, port) = hostport.rsplit_once(':').unwrap();
    let mut cmd = Command::new(bin(&["mariadb", "mysql"]));
    cmd.args([
        "--no-defaults",
        "--protocol=TCP",
        "--batch",
        "--skip-column-names",
    ])
    .args(["-h", host, "-P", port, "-u", user])
    .env("MYSQL_PWD", pw)
    .args(["-e", statements]);
    let db = db.split('?').next().unwrap_or_default();
    if !db.is_empty() {
        cmd.arg(db);
    }
    cmd
}

fn bin(names: &[&str]) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/usr/bin", "/usr/local/bin"].map(PathBuf::from));
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no {}: install Debian's mariadb-server (apt-get install mariadb-server), or run .ci/run",
                names[0]
            )
        })
}

/// The user the server runs as: this one, or `mysql` when this is root.
fn server_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let id = |flag: &str| -> u32 {
        let out = Command::new("id")
            .args([flag, "mysql"])
            .output_bounded()
            .expect("id mysql");
        assert!(
            out.status.success(),
            "the tests run as root and the server is run as `mysql`: create the user (Debian's mariadb-server does), or run .ci/run"
        );
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    Some((id("-u"), id("-g")))
}

fn as_user(cmd: &mut Command, user: Option<(u32, u32)>) -> &mut Command {
    use std::os::unix::process::CommandExt;
    if let Some((uid, gid)) = user {
        cmd.uid(uid).gid(gid);
    }
    cmd
}

/// Removes the folders of test servers whose test process is gone. A folder is named by the
/// pid that made it, and only a dead pid's is removed: another test binary starting at the
/// same time (another worktree, `cargo test` beside `.ci/run`) may be using its own.
fn clear_stale(tmp: &Path) {
    for e in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("evals-my-test-") else {
            continue;
        };
        let server = std::fs::read_to_string(e.path().join("server.pid")).unwrap_or_default();
        let alive = |pid: &str| !pid.is_empty() && Path::new("/proc").join(pid).exists();
        if !alive(pid) && !alive(server.trim()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn start() -> Server {
    let user = server_user();
    // Under /tmp, not target/: the `mysql` user must reach it, and a socket path must be
    // short.
    let tmp = PathBuf::from("/tmp");
    clear_stale(&tmp);
    let dir = tmp.join(format!("evals-my-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let secret = format!("my-test-{}-{}", std::process::id(), nanos());
    std::fs::write(
        dir.join("init.sql"),
        format!(
            "CREATE USER 'evals'@'%' IDENTIFIED BY '{secret}';\nGRANT ALL PRIVILEGES ON *.* TO 'evals'@'%' WITH GRANT OPTION;\n"
        ),
    )
    .unwrap();
    crate::pg::certificates(&dir);
    if let Some((uid, gid)) = user {
        for f in ["", "init.sql", "server.key", "server.crt", "ca.crt"] {
            std::os::unix::fs::chown(dir.join(f), Some(uid), Some(gid)).unwrap();
        }
    }
    let out = as_user(
        &mut Command::new(bin(&["mariadb-install-db", "mysql_install_db"])),
        user,
    )
    .arg("--no-defaults")
    .arg(format!("--datadir={}", dir.join("data").display()))
    .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
    .output_within(Duration::from_secs(120))
    .expect("run mariadb-install-db");
    assert!(
        out.status.success(),
        "mariadb-install-db failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mariadbd = bin(&["mariadbd", "mysqld"]);
    let d = |name: &str| dir.join(name).display().to_string();
    let args = vec![
        "--no-defaults".to_string(),
        format!("--datadir={}", d("data")),
        format!("--socket={}", d("sock")),
        format!("--pid-file={}", d("server.pid")),
        format!("--log-error={}", d("server.log")),
        format!("--port={port}"),
        "--bind-address=127.0.0.1".to_string(),
        "--skip-name-resolve".to_string(),
        format!("--init-file={}", d("init.sql")),
        format!("--ssl-ca={}", d("ca.crt")),
        format!("--ssl-cert={}", d("server.crt")),
        format!("--ssl-key={}", d("server.key")),
        "--innodb-flush-log-at-trx-commit=0".to_string(),
        "--skip-log-bin".to_string(),
        "--max-connections=300".to_string(),
        "--performance-schema=OFF".to_string(),
    ];
    let (tx, rx) = std::sync::mpsc::channel();
    // The server's parent is this thread, parked for as long as the tests run: when the
    // test binary exits, the server is killed.
    std::thread::spawn(move || {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(mariadbd);
        as_user(&mut cmd, user)
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: prctl is async-signal-safe; set after the uid change, which clears it.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn();
        let ok = child.is_ok();
        tx.send(child.map(|_| ()).map_err(|e| e.to_string()))
            .unwrap();
        if ok {
            loop {
                std::thread::park();
            }
        }
    });
    rx.recv()
        .unwrap()
        .unwrap_or_else(|e| panic!("start mariadbd: {e}"));
    let url = format!("mysql://evals:{secret}@127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = client(&url, "SELECT 1")
            .output_within(Duration::from_secs(30))
            .expect("run the mariadb client");
        if out.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the test MariaDB server did not come up: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Server {
        url,
        ca: dir.join("ca.crt"),
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}
