//! The largest value a number of the command line or the config may take where it sizes
//! memory or a wait: `--repeat`, `-p`, `-j`, `--shard K/N`, `defaults.*`, the byte limits.
//! Past these a value is a typo (`--repeat 99999999999`), never a plan: it would abort on a
//! failed allocation or a panic instead of saying so. The flags are checked as clap parses
//! them, the config's values as it loads, and a library caller's in [`crate::runner::RunPlan`];
//! each message names the flag or key, the value, the bound and the fix.

/// Tries per case (`--repeat`, `defaults.repeat`): each try is kept until the case ends.
pub const MAX_REPEAT: usize = 10_000;

/// Cases in flight per experiment (`-p`, `defaults.parallelism`): each one a task, and
/// with an exec adapter a worker process.
pub const MAX_PARALLELISM: usize = 1_024;

/// Experiments at a time (`-j`; `-j 0` still means all of them).
pub const MAX_CONCURRENCY: usize = 1_024;

/// Shards of a run (`check --shard K/N`'s N): the cut weighs every case against each shard.
pub const MAX_SHARDS: u32 = 1_024;

/// Seconds a call may take (`defaults.timeout`): a day.
pub const MAX_TIMEOUT_S: f64 = 86_400.0;

/// The most a body limit may be raised to (`cassettes.max_response_bytes`,
/// `adapter.max_request_bytes`): 1 GiB, a body held whole in memory.
pub const MAX_BODY_BYTES: u64 = 1 << 30;

/// `value` (as given: `text`) when it is at most `max`, else what `what` allows, for a
/// message that names the flag or key before it: `at most 10000 tries per case`.
pub fn at_most<T: PartialOrd + std::fmt::Display>(
    value: T,
    max: T,
    unit: &str,
) -> Result<T, String> {
    if value <= max {
        Ok(value)
    } else {
        Err(format!("at most {max} {unit}"))
    }
}

/// A whole number of a flag (clap's value parser): not a number, or one past `max`, is
/// refused naming what it counts and the bound.
pub fn count(text: &str, max: usize, unit: &str) -> Result<usize, String> {
    let text = text.trim();
    let too_many = || format!("at most {max} {unit}: give a smaller number");
    match text.parse::<usize>() {
        Ok(n) => at_most(n, max, unit).map_err(|_| too_many()),
        // Digits past what a usize holds are a number too, and too many.
        Err(_) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => Err(too_many()),
        Err(_) => Err(format!(
            "not a whole number: give the {unit}, at most {max}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_past_its_bound_names_the_bound_and_a_number_within_passes() {
        assert_eq!(count("10000", MAX_REPEAT, "tries per case"), Ok(10_000));
        assert_eq!(
            count("99999999999", MAX_REPEAT, "tries per case"),
            Err("at most 10000 tries per case: give a smaller number".to_string())
        );
        assert_eq!(
            count("99999999999999999999999", MAX_REPEAT, "tries per case"),
            Err("at most 10000 tries per case: give a smaller number".to_string())
        );
        assert_eq!(
            count("-3", MAX_REPEAT, "tries per case"),
            Err("not a whole number: give the tries per case, at most 10000".to_string())
        );
    }
}
