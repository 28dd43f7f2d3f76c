//! Your own provider whose answer is async code, run from an async `main`: the model is a
//! task of this program (it could be an SDK's async client, a local model server, a
//! database) that the provider asks over a channel and awaits. The suite is built in Rust;
//! the run is awaited on the program's own runtime (`evaluate_async`), and the provider's
//! futures run there too.
//!
//! ```sh
//! cargo run --example own_async_provider
//! ```

use llm_evals::cassette::CallError;
use llm_evals::provider::{AnswerFuture, ChatRequest, Completion};
use llm_evals::results::Usage;
use llm_evals::suite::{Case, Contender};
use llm_evals::{Provider, RunOptions, SuiteBuilder, evaluate_async};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

/// A question for the model task, and where its answer goes.
type Ask = (String, oneshot::Sender<String>);

/// Answers by asking the model task and awaiting its reply.
struct Remote {
    ask: mpsc::Sender<Ask>,
}

impl Provider for Remote {
    fn models(&self) -> Option<Vec<String>> {
        Some(vec!["kb-1".into()])
    }

    fn answer_async<'a>(
        &'a self,
        _contender: &'a Contender,
        _case: &'a Case,
        req: &'a ChatRequest,
    ) -> AnswerFuture<'a> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            let gone = |_| CallError::Transport("the model task is gone".into());
            self.ask.send((req.user.clone(), tx)).await.map_err(gone)?;
            let text = rx
                .await
                .map_err(|_| CallError::Transport("no answer".into()))?;
            Ok(Completion {
                usage: Usage {
                    input_tokens: Some(req.user.split_whitespace().count() as u64),
                    output_tokens: Some(text.split_whitespace().count() as u64),
                    ..Usage::default()
                },
                text,
                ..Completion::default()
            })
        })
    }
}

/// The "model": a task that knows three capitals.
async fn model(mut asks: mpsc::Receiver<Ask>) {
    while let Some((question, reply)) = asks.recv().await {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let city = [("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid")]
            .iter()
            .find(|(country, _)| question.contains(country))
            .map_or("I do not know", |(_, city)| city);
        let _ = reply.send(format!("The capital is {city}."));
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (ask, asks) = mpsc::channel(16);
    tokio::spawn(model(asks));

    let dir = tempfile::tempdir()?;
    let mut suite = SuiteBuilder::new("capitals", dir.path())
        .provider("remote", json!({ "kind": "remote", "models": ["kb-1"] }))
        .scorer(json!({ "kind": "assertions" }));
    for (country, city) in [
        ("France", "Paris"),
        ("Italy", "Rome"),
        ("Portugal", "Lisbon"),
    ] {
        suite = suite.case(
            "europe",
            json!({ "id": country.to_lowercase(), "input": format!("What is the capital of {country}?"),
                    "expect": { "contains": [city] } }),
        );
    }
    let suite = suite.build()?;

    let run = evaluate_async(
        &suite,
        RunOptions::default().provider("remote", Remote { ask }),
    )
    .await?;
    let e = &run.experiments[0];
    println!(
        "{} on {}: {} cases, pass rate {:.0}%, {} errors",
        e.contender.id,
        e.dataset,
        e.cases_total,
        100.0 * e.means["pass_rate"].unwrap_or(0.0),
        e.errors
    );
    Ok(())
}
