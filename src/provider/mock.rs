//! LLMEvalForge's mock provider: each case is answered with its own `mock_response`, in the
//! process, with no key and no cassette. A dataset written for LLMEvalForge runs as it is:
//! `mock: { models: [mock] }` in the config, or `-m mock/mock`.

use super::{ChatRequest, Completion, Provider};
use crate::cassette::CallError;
use crate::results::Usage;
use crate::suite::{Case, Contender};

/// The mock provider's one model.
const MODELS: &[&str] = &["mock"];

/// The `mock` provider (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mock;

impl Provider for Mock {
    fn models(&self) -> Option<Vec<String>> {
        Some(MODELS.iter().map(|m| m.to_string()).collect())
    }

    fn answer(
        &self,
        contender: &Contender,
        case: &Case,
        req: &ChatRequest,
    ) -> Result<Completion, CallError> {
        complete(contender, case, req)
    }
}

/// The case's `mock_response` as the model's text; a case without one is an error of that
/// case (there is nothing to answer it with), naming where to add it.
fn complete(
    contender: &Contender,
    case: &Case,
    req: &ChatRequest,
) -> Result<Completion, CallError> {
    let Some(text) = case.mock_response.clone() else {
        let at = std::env::current_dir()
            .map(|cwd| case.location_in(&cwd))
            .unwrap_or_else(|_| case.location());
        return Err(CallError::Transport(format!(
            "{}: case '{}' has no mock_response to answer with; add \"mock_response\": \"...\" to it ({at}), or run it with another model (-m)",
            contender.id(),
            case.id
        )));
    };
    // Token counts are estimates (words), as LLMEvalForge's are; the mock costs nothing.
    let words = |s: &str| s.split_whitespace().count() as u64;
    Ok(Completion {
        usage: Usage {
            input_tokens: Some(req.system.as_deref().map(words).unwrap_or(0) + words(&req.user)),
            output_tokens: Some(words(&text)),
            cost_usd: Some(0.0),
            ..Usage::default()
        },
        text,
        latency_s: 0.0,
        ..Completion::default()
    })
}
