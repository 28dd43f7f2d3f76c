//! Blocking calls that are safe from any context. A library function that blocks (a run, a
//! history query) may be called from a plain `main`, from a thread of a caller's tokio
//! runtime, or from inside an `async fn` that a runtime polls. Blocking a runtime's thread
//! on a runtime of our own would panic ("Cannot start a runtime from within a runtime"),
//! so such work moves to a scoped thread of its own there, and runs in place elsewhere.

/// Runs `f` here, or, when this thread belongs to a tokio runtime, on a scoped thread of
/// its own (joined before this returns; a panic in `f` is resumed here).
pub(crate) fn outside_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}
