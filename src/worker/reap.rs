//! Ending everything a worker (an exec adapter's, an exec scorer's) started (Linux).
//!
//! A worker runs in its own process group, but a descendant that calls `setsid` (a daemon,
//! a language server, `nohup`-style helpers) leaves the group, and a double fork leaves the
//! worker's family tree too. evals is a child subreaper ([`crate::harden::harden_process`]),
//! so an orphaned descendant is re-parented to evals rather than to init. When a worker
//! stops, [`stop`] ends its whole lineage, found in `/proc`: the worker, every process
//! below it, every member of its process group, and every process evals adopted that
//! still carries the worker's token in its environment; each is stopped
//! (`SIGSTOP`, so nothing forks while the lineage is walked again) and then killed. When a
//! run's workers are all gone, [`sweep`] ends whatever evals adopted since its first worker
//! started (only workers' descendants can be adopted while workers run: evals starts no
//! other process meanwhile). Both reap what they killed, so no zombie stays behind.
//!
//! Processes are named by pid and start time, so a pid the kernel hands out again is never
//! mistaken for one of ours. The workers themselves are tokio's children, reaped by tokio;
//! they are never waited for here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A process: its pid and its start time (clock ticks after boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Ident {
    pub pid: i32,
    start: u64,
}

/// One line of `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy)]
struct Proc {
    id: Ident,
    ppid: i32,
    pgrp: i32,
}

/// Every worker this process started (never their descendants).
struct Registry {
    workers: BTreeSet<Ident>,
    first_start: Option<u64>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    workers: BTreeSet::new(),
    first_start: None,
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
/// stime cutime cstime priority nice threads itrealvalue starttime ...`; `comm` may hold
/// spaces and parentheses, so fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<Proc> {
    let (head, tail) = text.rsplit_once(')')?;
    let pid = head.split_once(" (")?.0.trim().parse().ok()?;
    let fields: Vec<&str> = tail.split_whitespace().collect();
    Some(Proc {
        id: Ident {
            pid,
            start: fields.get(19)?.parse().ok()?,
        },
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
    })
}

fn read_stat(pid: i32) -> Option<Proc> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process visible in `/proc`.
fn scan() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// Registers a worker just started; `None` if it is already gone.
pub(crate) fn started(pid: u32) -> Option<Ident> {
    let p = read_stat(i32::try_from(pid).ok()?)?;
    let mut r = registry();
    r.workers.insert(p.id);
    r.first_start = Some(r.first_start.map_or(p.id.start, |s| s.min(p.id.start)));
    Some(p.id)
}

fn me() -> i32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

/// Whether `pid`'s environment holds `want` (`NAME=token`, a worker's, inherited).
fn carries_token(pid: i32, want: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|b| *b == 0).any(|kv| kv == want.as_bytes()))
        .unwrap_or(false)
}

/// The processes matching `root` and everything below them, never another worker.
fn lineage(procs: &[Proc], workers: &BTreeSet<Ident>, root: impl Fn(&Proc) -> bool) -> Vec<Ident> {
    let mut children: BTreeMap<i32, Vec<&Proc>> = BTreeMap::new();
    for p in procs {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut out = BTreeSet::new();
    let mut queue: Vec<&Proc> = procs.iter().filter(|p| root(p)).collect();
    while let Some(p) = queue.pop() {
        if out.insert(p.id) {
            let below = children.get(&p.id.pid).into_iter().flatten();
            queue.extend(below.filter(|c| !workers.contains(&c.id)));
        }
    }
    out.into_iter().collect()
}

/// Whether `p` descends from `me` (following parents through `procs`).
fn descends_from(procs: &BTreeMap<i32, Proc>, p: &Proc, me: i32) -> bool {
    let mut ppid = p.ppid;
    for _ in 0..procs.len() {
        if ppid == me {
            return true;
        }
        match procs.get(&ppid) {
            Some(parent) => ppid = parent.ppid,
            None => return false,
        }
    }
    false
}

/// Stops (`SIGSTOP`) the lineage `find` names until a fresh look finds nobody new, then
/// kills it all and reaps what evals adopted.
fn end(find: impl Fn(&[Proc]) -> Vec<Ident>) {
    let workers = registry().workers.clone();
    let mut frozen: BTreeSet<Ident> = BTreeSet::new();
    for _ in 0..16 {
        let new: Vec<Ident> = find(&scan())
            .into_iter()
            .filter(|id| !frozen.contains(id))
            .collect();
        if new.is_empty() {
            break;
        }
        for id in new {
            // SAFETY: kill(2) only signals; the pid was just read with its start time.
            unsafe {
                libc::kill(id.pid, libc::SIGSTOP);
            }
            frozen.insert(id);
        }
    }
    for id in &frozen {
        // SAFETY: as above; a stopped process cannot have exited and been replaced.
        unsafe {
            libc::kill(id.pid, libc::SIGKILL);
        }
    }
    let killed: BTreeSet<i32> = frozen.iter().map(|id| id.pid).collect();
    reap(
        frozen
            .into_iter()
            .filter(|id| !workers.contains(id))
            .collect(),
        &killed,
    );
}

/// Waits for the killed processes evals adopted, or will adopt once their killed parent
/// is gone, so none stays a zombie. One whose parent is someone else (init, when evals is
/// no subreaper) is left to it. Gives up after two seconds.
fn reap(mut pending: Vec<Ident>, killed: &BTreeSet<i32>) {
    let me = me();
    let deadline = Instant::now() + Duration::from_secs(2);
    while !pending.is_empty() && Instant::now() < deadline {
        pending.retain(|id| match read_stat(id.pid) {
            Some(p) if p.id == *id && p.ppid == me => {
                let mut status = 0;
                // SAFETY: waitpid on one pid that is our child (adopted); it only reports.
                let r = unsafe { libc::waitpid(id.pid, &mut status, libc::WNOHANG) };
                r == 0
            }
            Some(p) if p.id == *id => killed.contains(&p.ppid),
            _ => false,
        });
        if !pending.is_empty() {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Ends a worker and its whole lineage (see the module docs); `marker` is the entry of its
/// environment that holds its token (`OPENAI_API_KEY=<token>` for an adapter's worker),
/// which its descendants inherit.
pub(crate) fn stop(worker: Ident, marker: &str) {
    let me = me();
    end(|procs| {
        let workers = registry().workers.clone();
        let by_pid: BTreeMap<i32, Proc> = procs.iter().map(|p| (p.id.pid, *p)).collect();
        lineage(procs, &workers, |p| {
            p.id == worker
                || (p.pgrp == worker.pid && descends_from(&by_pid, p, me))
                || (p.ppid == me && !workers.contains(&p.id) && carries_token(p.id.pid, marker))
        })
    });
}

/// Ends and reaps everything evals adopted since its first worker started, and what is
/// below it. Call when a run's workers are all gone.
pub(crate) fn sweep() {
    let me = me();
    let Some(first) = registry().first_start else {
        return;
    };
    end(|procs| {
        let workers = registry().workers.clone();
        lineage(procs, &workers, |p| {
            p.ppid == me && !workers.contains(&p.id) && p.id.start >= first
        })
    });
}

/// Kills (`SIGKILL`, twice over a fresh look, nobody stopped or reaped: the process is
/// about to exit) every live worker, every member of its process group below evals, and
/// whatever evals adopted since the first worker started, with everything below them.
pub(crate) fn kill_all() {
    let me = me();
    let (workers, first) = {
        let r = registry();
        (r.workers.clone(), r.first_start)
    };
    let Some(first) = first else {
        return;
    };
    for _ in 0..2 {
        let procs = scan();
        let by_pid: BTreeMap<i32, Proc> = procs.iter().map(|p| (p.id.pid, *p)).collect();
        let groups: BTreeSet<i32> = procs
            .iter()
            .filter(|p| workers.contains(&p.id))
            .map(|p| p.id.pid)
            .collect();
        let doomed = lineage(&procs, &BTreeSet::new(), |p| {
            workers.contains(&p.id)
                || (groups.contains(&p.pgrp) && descends_from(&by_pid, p, me))
                || (p.ppid == me && p.id.start >= first)
        });
        for id in doomed {
            // SAFETY: kill(2) only signals; the pid was just read with its start time.
            unsafe {
                libc::kill(id.pid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let line = "4242 (a (weird) name) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200";
        let p = parse_stat(line).unwrap();
        assert_eq!(
            (p.id.pid, p.ppid, p.pgrp, p.id.start),
            (4242, 17, 4242, 987654)
        );
        let me = read_stat(std::process::id() as i32).unwrap();
        assert_eq!(me.id.pid, std::process::id() as i32);
        assert!(me.id.start > 0);
    }

    #[test]
    fn a_lineage_is_the_roots_and_everything_below_them_but_other_workers() {
        let p = |pid, ppid, start| Proc {
            id: Ident { pid, start },
            ppid,
            pgrp: pid,
        };
        // evals (1) started workers 10 and 20; 10 → 11 → 12; 30 is unrelated.
        let procs = [
            p(1, 0, 1),
            p(10, 1, 5),
            p(11, 10, 6),
            p(12, 11, 7),
            p(20, 1, 8),
            p(30, 2, 9),
        ];
        let workers: BTreeSet<Ident> = [procs[1].id, procs[4].id].into();
        let got = lineage(&procs, &workers, |x| x.id.pid == 10);
        assert_eq!(got.iter().map(|i| i.pid).collect::<Vec<_>>(), [10, 11, 12]);
        let from_evals = lineage(&procs, &workers, |x| x.id.pid == 1);
        assert_eq!(
            from_evals.iter().map(|i| i.pid).collect::<Vec<_>>(),
            [1],
            "another worker is never in a lineage"
        );
    }
}
