use super::args::RenderArgs;
use super::output::Out;
use crate::error::{Result, exit};

/// `evals render FILE.json`: re-prints a saved run; calls nothing.
pub fn run(a: &RenderArgs, out: &Out) -> Result<i32> {
    let run = crate::report::json::load(&a.file)?;
    let view = super::run::View {
        breakdown: false,
        totals: a.totals,
    };
    super::run::emit(&run, a.format, a.output.as_deref(), view, out)?;
    Ok(exit::OK)
}
