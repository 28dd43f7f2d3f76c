//! Start-up hardening of evals' own process (Linux; elsewhere nothing changes).
//!
//! evals holds real API keys in its environment and memory, and runs exec workers as the
//! same user. Non-dumpable, its `/proc/<pid>/environ`, `mem` and the like are closed to
//! processes of that user (root still reads them), and it cannot be ptrace-attached
//! without privilege. As a child subreaper it adopts the orphaned descendants of its
//! workers (one that calls `setsid` after its parent exits), so
//! the exec adapter can end and reap them; see `worker/reap.rs`.

/// Makes this process non-dumpable and a child subreaper (`prctl`; Linux only, best
/// effort: a kernel that refuses leaves the process as it was). Call it first thing.
pub fn harden_process() {
    #[cfg(target_os = "linux")]
    // SAFETY: both prctl options only set a flag of the calling process.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0, 0, 0);
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// Checked in a forked child, so the test process itself is left as it was.
    #[test]
    fn harden_process_makes_evals_non_dumpable_and_a_subreaper() {
        // SAFETY: the child only makes system calls (prctl, _exit) before it exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            super::harden_process();
            let mut reaper: libc::c_int = 0;
            // SAFETY: prctl reads flags of this process; PR_GET_CHILD_SUBREAPER writes an
            // int through the pointer given.
            let code = unsafe {
                let dumpable = libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0);
                libc::prctl(
                    libc::PR_GET_CHILD_SUBREAPER,
                    &mut reaper as *mut libc::c_int,
                );
                match (dumpable, reaper) {
                    (0, 1) => 0,
                    (0, _) => 2,
                    _ => 1,
                }
            };
            // SAFETY: ends the forked child without running the parent's destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "the child did not exit: {status}");
        match libc::WEXITSTATUS(status) {
            0 => {}
            1 => panic!("PR_GET_DUMPABLE is not 0 after harden_process()"),
            2 => panic!("not a child subreaper after harden_process()"),
            other => panic!("child exited {other}"),
        }
    }
}
