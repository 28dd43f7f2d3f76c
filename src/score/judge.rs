//! The LLM judge, recorded: `scorer: { kind: judge, judge: { provider, model, temperature },
//! rubric, scale, metrics }`. Each metric is one call to the judge model, whose rubric (a
//! template of `{{ input }}`, `{{ output }}`, `{{ expected }}`, `{{ metadata.x }}`,
//! `{{ tool_calls }}`, `{{ metric.name }}`, `{{ metric.description }}`) asks for a JSON verdict
//! `{"score", "reason"}`; the score, on `scale`, is normalised to 0..1 and the reason is
//! the metric's diagnostic. Without a rubric, built-in ones judge `accuracy` (against
//! `expected`) and `relevancy` (to the input).
//!
//! The judge's calls go through the cassette layer like a contender's, under their own key
//! ([`judge_cassette_key`]: `judge/<judge model>/<contender>/<dataset>/<case>.json`), so a
//! replay judges offline with no key, bit for bit. A miss, a failed call or a verdict that
//! is not the JSON asked for is an error of the case (kind `scorer` for a verdict), never
//! a 0. What the judge's calls cost is kept apart from the contender's
//! ([`super::ScoreContext::judge_usage`]).

use minijinja::Environment;
use serde_json::{Value, json};

use super::{ScoreContext, ScoreFuture, Scorer};
use crate::cassette::{CallError, CassetteKey, Route, SessionMeta};
use crate::error::{Error, Result};
use crate::provider::ChatRequest;
use crate::results::{CaseError, CaseErrorKind, Diagnostic, MetricDef, Outcome, Reply, Score};
use crate::suite::config::{JudgeModel, MetricConfig, ScorerConfig};
use crate::suite::{Case, Contender, Suite};

/// The built-in rubric of `accuracy`: the reply against the case's `expected`.
const ACCURACY: &str = "You are grading an answer against a reference answer.\n\n\
Question or input:\n{{ input }}\n\nReference answer:\n{{ expected }}\n\n\
Answer to grade:\n{{ output }}\n\n\
Score how well the answer semantically matches the reference answer (same facts and \
meaning; wording does not matter).";

/// The built-in rubric of `relevancy`: the reply against the input.
const RELEVANCY: &str = "You are grading whether an answer addresses its question.\n\n\
Question or input:\n{{ input }}\n\nAnswer to grade:\n{{ output }}\n\n\
Score how relevant the answer is to the question: on topic, answering what was asked, \
without digression.";

/// The instruction every call ends with: what a verdict must look like.
const VERDICT: &str = "Reply with a JSON object only: {\"score\": <a number from {lo} to {hi}, \
{hi} best>, \"reason\": \"<one or two sentences>\"}.";

/// The judge scorer of one `kind: judge` entry.
#[derive(Debug)]
pub struct JudgeScorer {
    judge: Contender,
    metrics: Vec<MetricDef>,
    env: Environment<'static>,
    scale: (f64, f64),
    /// The suite's `pricing:` of the judge (by its id, then its model), else its provider's.
    pricing: Option<crate::suite::config::Pricing>,
}

impl JudgeScorer {
    /// The scorer of one `kind: judge` entry of `suite`: loads the rubric (a file beside
    /// the config, or inline text) and checks the scale and metrics.
    pub fn new(
        suite: &Suite,
        judge: &JudgeModel,
        rubric: Option<&str>,
        scale: Option<[f64; 2]>,
        metrics: &[MetricConfig],
    ) -> Result<JudgeScorer> {
        let at = &suite.display_path;
        let bad = |m: String| Error::Config(format!("{at}: scorer (judge): {m}"));
        if judge.model.trim().is_empty() || judge.provider.trim().is_empty() {
            return Err(bad(
                "judge needs a provider and a model, e.g. judge: { provider: openrouter, model: openai/gpt-4.1-mini }".into(),
            ));
        }
        let [lo, hi] = scale.unwrap_or([1.0, 5.0]);
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(bad(format!(
                "scale [{lo}, {hi}] is not a range: give [low, high] with low < high, e.g. [1, 5]"
            )));
        }
        let declared: Vec<MetricConfig> = if metrics.is_empty() {
            if rubric.is_some() {
                return Err(bad(
                    "metrics is empty: name what the rubric judges, e.g. metrics: [{ name: accuracy, description: \"...\" }]".into(),
                ));
            }
            ["accuracy", "relevancy"]
                .iter()
                .map(|n| MetricConfig {
                    name: n.to_string(),
                    description: String::new(),
                    primary: false,
                    higher_is_better: true,
                })
                .collect()
        } else {
            metrics.to_vec()
        };
        let mut env = Environment::new();
        env.set_keep_trailing_newline(false);
        let shared = match rubric {
            Some(r) => Some(load_rubric(suite, r)?),
            None => None,
        };
        let mut defs: Vec<MetricDef> = Vec::new();
        for m in &declared {
            if m.name.trim().is_empty() {
                return Err(bad("metrics: a metric has an empty name".into()));
            }
            if defs.iter().any(|d| d.name == m.name) {
                return Err(bad(format!(
                    "metrics: '{}' is declared twice; keep one",
                    m.name
                )));
            }
            let text = match (&shared, m.name.as_str()) {
                (Some(t), _) => t.clone(),
                (None, "accuracy") => ACCURACY.to_string(),
                (None, "relevancy") => RELEVANCY.to_string(),
                (None, other) => {
                    return Err(bad(format!(
                        "metric '{other}' has no built-in rubric (only accuracy and relevancy do): give `rubric: prompts/judge.md`"
                    )));
                }
            };
            env.add_template_owned(m.name.clone(), text)
                .map_err(|e| bad(format!("rubric: {e}")))?;
            defs.push(MetricDef {
                name: m.name.clone(),
                description: if m.description.is_empty() {
                    format!("{} (judged by {})", m.name, judge.model)
                } else {
                    m.description.clone()
                },
                primary: m.primary,
                higher_is_better: m.higher_is_better,
            });
        }
        match defs.iter().filter(|m| m.primary).count() {
            0 => defs[0].primary = true,
            1 => {}
            n => {
                return Err(bad(format!(
                    "metrics: {n} metrics are primary; mark exactly one `primary: true`"
                )));
            }
        }
        defs.sort_by_key(|m| !m.primary);
        let judge = crate::suite::lineup::judge_contender(&suite.config, judge);
        let pricing = suite
            .config
            .pricing
            .get(judge.id())
            .or_else(|| suite.config.pricing.get(&judge.info.model))
            .copied();
        Ok(JudgeScorer {
            judge,
            metrics: defs,
            env,
            scale: (lo, hi),
            pricing,
        })
    }

    /// The judge's request for one metric of a case's reply.
    fn request(
        &self,
        metric: &MetricDef,
        case: &Case,
        reply: &Reply,
    ) -> std::result::Result<ChatRequest, String> {
        let text = |v: &Option<Value>| match v {
            None => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
        };
        let output = match (&reply.output, &reply.raw) {
            (Some(_), _) => text(&reply.output),
            (None, Some(raw)) => raw.clone(),
            (None, None) => String::new(),
        };
        // The calls the reply asked for, as JSON text (`[]`: none; empty: nobody could see),
        // so a rubric can judge an agent's action and not only its words.
        let tool_calls = reply
            .tool_calls
            .as_ref()
            .map(|c| serde_json::to_string(c).unwrap_or_default())
            .unwrap_or_default();
        let ctx = json!({
            "input": case.input.as_text(),
            "output": output,
            "tool_calls": tool_calls,
            "expected": text(&case.expected),
            "metadata": case.metadata,
            "case": { "id": case.id, "dataset": case.dataset, "variant": case.variant },
            "metric": { "name": metric.name, "description": metric.description },
        });
        let rubric = self
            .env
            .get_template(&metric.name)
            .and_then(|t| t.render(&ctx))
            .map_err(|e| format!("the judge's rubric of {}: {e}", metric.name))?;
        let (lo, hi) = self.scale;
        let verdict = VERDICT
            .replace("{lo}", &number(lo))
            .replace("{hi}", &number(hi));
        Ok(ChatRequest {
            system: Some(verdict),
            user: rubric,
            json: true,
            ..ChatRequest::default()
        })
    }

    /// Reads a verdict: the normalised score and the reason.
    fn read_verdict(&self, text: &str) -> std::result::Result<(f64, f64, String), String> {
        let body = text.trim();
        // A fenced block (```json ... ```) is still the object asked for.
        let body = match (body.find('{'), body.rfind('}')) {
            (Some(a), Some(b)) if a < b => &body[a..=b],
            _ => body,
        };
        let shown = || -> String { crate::secrets::scrub(text).chars().take(120).collect() };
        let v: Value = serde_json::from_str(body).map_err(|e| {
            format!(
                "its verdict is not the JSON {{\"score\", \"reason\"}} asked for ({e}): {}",
                shown()
            )
        })?;
        let raw = match v.get("score") {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("its verdict has no number `score`: {}", shown()))?;
        let (lo, hi) = self.scale;
        if !(lo..=hi).contains(&raw) {
            return Err(format!(
                "its verdict's score {} is outside the scale [{}, {}]",
                number(raw),
                number(lo),
                number(hi)
            ));
        }
        let reason = match v.get("reason") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        Ok(((raw - lo) / (hi - lo), raw, reason))
    }

    /// Asks the judge about one metric through the case's judge cassette.
    async fn ask(
        &self,
        metric: &MetricDef,
        case: &Case,
        reply: &Reply,
        run: &ScoreContext<'_>,
    ) -> std::result::Result<(f64, Diagnostic), CaseError> {
        let who = self.judge.id();
        let scorer_error =
            |m: String| CaseError::new(CaseErrorKind::Scorer, format!("judge {who}: {m}"));
        let req = self.request(metric, case, reply).map_err(scorer_error)?;
        let provider = run
            .providers
            .resolve(&self.judge.kind, &self.judge.info.provider)
            .map_err(|e| CaseError::new(CaseErrorKind::Other, format!("judge {who}: {e}")))?;
        let key = provider
            .key_env(&self.judge)
            .and_then(|k| run.keys.get(&k))
            .cloned();
        let meta = SessionMeta {
            case: case.key(),
            contender: (&self.judge.info).into(),
            hint: format!(
                "run `evals record -d {} -c {} -m {}` to record it with its judge's verdict",
                crate::text::shell_word(&case.dataset),
                crate::text::shell_word(&case.id),
                crate::text::shell_word(run.contender.id())
            ),
            route: Route {
                vendor: provider.vendor(&self.judge),
                limits: self
                    .judge
                    .rate_limits
                    .iter()
                    .map(|(key, rl)| crate::cassette::Limit {
                        key: key.clone(),
                        burst: rl.burst,
                        per_minute: rl.per_minute,
                    })
                    .collect(),
            },
            base_url: provider.base_url(&self.judge).unwrap_or_default(),
        };
        let cassette = judge_cassette_key(&self.judge, run.contender, &case.dataset, &case.id);
        let call = async {
            let session = run.judge_session(&cassette, meta)?;
            let done = crate::provider::complete(
                provider.as_ref(),
                &self.judge,
                case,
                &req,
                key.as_deref(),
                self.pricing.or_else(|| provider.pricing()).as_ref(),
                &session,
            )
            .await;
            let finished = session.finish();
            let done = done?;
            finished?;
            Ok::<_, CallError>(done)
        };
        let completion = call.await.map_err(|e| {
            let mut err = CaseError::from(e);
            err.message = format!("judge {who}: {}", err.message);
            err
        })?;
        run.judge_usage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .add(&completion.usage);
        let (value, raw, reason) = self.read_verdict(&completion.text).map_err(scorer_error)?;
        let (_, hi) = self.scale;
        Ok((
            value,
            Diagnostic {
                field: metric.name.clone(),
                want: Value::String(metric.description.clone()),
                got: Value::String(reason),
                outcome: Outcome::Other(format!("judged {}/{}", number(raw), number(hi))),
            },
        ))
    }
}

/// A number as a reader writes it: `5`, `3.5`.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

/// A rubric: a single line naming a file beside the config is that file; anything else is
/// inline text.
fn load_rubric(suite: &Suite, r: &str) -> Result<String> {
    let at = &suite.display_path;
    if !r.contains('\n') && !r.contains("{{") {
        let p = suite.root.join(r.trim());
        let shown = crate::suite::discovery::display_path(&p, &suite.cwd);
        if p.is_file() {
            return crate::fs::read_text(&p, &shown)
                .map_err(|e| e.named_by("scorer.rubric", Some(at)));
        }
        return Err(Error::Config(format!(
            "{at}: scorer.rubric: rubric file {shown} does not exist: create it, or write the rubric inline"
        )));
    }
    Ok(r.to_string())
}

/// Where a judge's verdicts on one contender's case are recorded:
/// `judge/<judge model>/<contender>/<dataset>/<case>.json` in the cassette folder.
pub fn judge_cassette_key(
    judge: &Contender,
    contender: &Contender,
    dataset: &str,
    case_id: &str,
) -> CassetteKey {
    // One folder per contender and settings: two temperatures of a model are judged apart.
    let mut who = contender.id().replace('/', "__");
    let slug = contender.settings_slug();
    if slug != "default" {
        who.push('.');
        who.push_str(&slug);
    }
    CassetteKey {
        provider: "judge".to_string(),
        model: judge.info.model.clone(),
        settings: who,
        dataset: dataset.to_string(),
        case_id: case_id.to_string(),
    }
}

/// The judge models a suite's scorers ask (for the run to read their keys first).
pub fn judges(suite: &Suite) -> Vec<Contender> {
    suite
        .scorers
        .iter()
        .filter_map(|s| match s {
            ScorerConfig::Judge { judge, .. } => {
                Some(crate::suite::lineup::judge_contender(&suite.config, judge))
            }
            _ => None,
        })
        .collect()
}

impl Scorer for JudgeScorer {
    fn metrics(&self) -> Vec<MetricDef> {
        self.metrics.clone()
    }

    /// Without the run there is no judge to ask: every metric "does not apply".
    fn score(&self, _case: &Case, reply: &Reply) -> Score {
        let zero = reply.error.is_some();
        Score {
            value: 0.0,
            metrics: self
                .metrics
                .iter()
                .map(|m| (m.name.clone(), zero.then_some(0.0)))
                .collect(),
            diagnostics: vec![],
            passed: None,
        }
    }

    fn score_checked<'a>(&'a self, case: &'a Case, reply: &'a Reply) -> ScoreFuture<'a> {
        Box::pin(async move {
            if reply.error.is_some() {
                return Ok(self.score(case, reply));
            }
            Err(CaseError::new(
                CaseErrorKind::Scorer,
                format!(
                    "judge {}: scored outside a run, which has no judge to ask",
                    self.judge.id()
                ),
            ))
        })
    }

    fn score_in<'a>(
        &'a self,
        case: &'a Case,
        reply: &'a Reply,
        run: &'a ScoreContext<'a>,
    ) -> ScoreFuture<'a> {
        Box::pin(async move {
            // An unusable reply is the model's failure: it scores 0 without a judge.
            if reply.error.is_some() {
                return Ok(self.score(case, reply));
            }
            let mut score = Score {
                value: 0.0,
                metrics: Default::default(),
                diagnostics: vec![],
                passed: None,
            };
            for m in &self.metrics {
                // A rubric that renders to nothing for this case (`{% if metadata.rubric
                // %}…{% endif %}`) does not apply to it: no call, the metric is none.
                if self
                    .request(m, case, reply)
                    .is_ok_and(|r| r.user.trim().is_empty())
                {
                    score.metrics.insert(m.name.clone(), None);
                    continue;
                }
                let (value, diagnostic) = self.ask(m, case, reply, run).await?;
                if m.primary {
                    score.value = value;
                }
                score.metrics.insert(m.name.clone(), Some(value));
                score.diagnostics.push(diagnostic);
            }
            Ok(score)
        })
    }

    fn verify(&self, case: &Case) -> Vec<String> {
        let probe = Reply {
            output: Some(Value::String(String::new())),
            raw: None,
            error: None,
            usage: Default::default(),
            tool_calls: None,
            trajectory: None,
            components: None,
        };
        self.metrics
            .iter()
            .filter_map(|m| self.request(m, case, &probe).err())
            .collect()
    }

    fn summary(&self, _case: &Case) -> String {
        let n = self.metrics.len();
        format!("{n} judged metric{}", if n == 1 { "" } else { "s" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::config::Config;

    fn scorer(scale: (f64, f64), metrics: &[(&str, &str)]) -> JudgeScorer {
        let judge = JudgeModel {
            provider: "openrouter".into(),
            model: "openai/gpt-4.1-mini".into(),
            temperature: Some(0.0),
        };
        let mut env = Environment::new();
        let mut defs = Vec::new();
        for (i, (name, rubric)) in metrics.iter().enumerate() {
            env.add_template_owned(name.to_string(), rubric.to_string())
                .unwrap();
            defs.push(MetricDef {
                name: name.to_string(),
                description: format!("{name} described"),
                primary: i == 0,
                higher_is_better: true,
            });
        }
        JudgeScorer {
            judge: crate::suite::lineup::judge_contender(&Config::default(), &judge),
            metrics: defs,
            env,
            scale,
            pricing: None,
        }
    }

    fn case() -> Case {
        let mut metadata = serde_json::Map::new();
        metadata.insert("topic".into(), json!("geo"));
        Case {
            id: "one".into(),
            dataset: "d".into(),
            variant: String::new(),
            input: crate::suite::CaseInput::Text("Capital of France?".into()),
            expected: Some(json!("Paris")),
            expect: None,
            tags: vec![],
            weight: 1.0,
            metadata,
            minimum_scores: Default::default(),
            mock_response: None,
            source: Default::default(),
            line: None,
            expected_components: None,
        }
    }

    fn reply(text: &str) -> Reply {
        Reply {
            output: Some(json!(text)),
            raw: None,
            error: None,
            usage: Default::default(),
            tool_calls: None,
            trajectory: None,
            components: None,
        }
    }

    #[test]
    fn a_verdict_on_the_scale_is_normalised_and_keeps_its_reason() {
        let s = scorer((1.0, 5.0), &[("accuracy", ACCURACY)]);
        let (v, raw, reason) = s
            .read_verdict(r#"{"score": 4, "reason": "close"}"#)
            .unwrap();
        assert_eq!((v, raw, reason.as_str()), (0.75, 4.0, "close"));
        // Fenced, or the score as text: still the verdict asked for.
        let fenced = s
            .read_verdict("```json\n{\"score\": \"5\", \"reason\": \"exact\"}\n```")
            .unwrap();
        assert_eq!(fenced.0, 1.0);
        let tenths = scorer((0.0, 10.0), &[("accuracy", ACCURACY)]);
        assert_eq!(tenths.read_verdict(r#"{"score": 0}"#).unwrap().0, 0.0);
    }

    #[test]
    fn a_verdict_off_the_scale_or_not_json_is_refused_never_a_zero() {
        let s = scorer((1.0, 5.0), &[("accuracy", ACCURACY)]);
        let off = s
            .read_verdict(r#"{"score": 7, "reason": "x"}"#)
            .unwrap_err();
        assert!(off.contains("outside the scale [1, 5]"), "{off}");
        let prose = s.read_verdict("Looks right to me.").unwrap_err();
        assert!(prose.contains("is not the JSON"), "{prose}");
        let wordy = s.read_verdict(r#"{"score": "good"}"#).unwrap_err();
        assert!(wordy.contains("no number `score`"), "{wordy}");
    }

    #[test]
    fn the_rubric_sees_the_case_the_reply_and_the_metric() {
        let s = scorer(
            (1.0, 5.0),
            &[(
                "tone",
                "{{ metric.name }}: {{ input }} / {{ output }} / {{ expected }} / {{ metadata.topic }}",
            )],
        );
        let req = s.request(&s.metrics[0], &case(), &reply("Paris")).unwrap();
        assert_eq!(req.user, "tone: Capital of France? / Paris / Paris / geo");
        assert!(req.json);
        let system = req.system.unwrap();
        assert!(system.contains("a number from 1 to 5"), "{system}");
        // The built-in accuracy rubric compares against the expected answer.
        let a = scorer((1.0, 5.0), &[("accuracy", ACCURACY)]);
        let req = a.request(&a.metrics[0], &case(), &reply("Lyon")).unwrap();
        assert!(
            req.user.contains("Reference answer:\nParis"),
            "{}",
            req.user
        );
        assert!(req.user.contains("Answer to grade:\nLyon"), "{}", req.user);
    }

    #[test]
    fn the_rubric_sees_the_tool_calls_the_reply_asked_for_as_json() {
        let s = scorer(
            (1.0, 5.0),
            &[("action", "Calls: {{ tool_calls }}|{{ output }}")],
        );
        let mut r = reply("");
        r.output = None;
        r.raw = Some(String::new());
        r.tool_calls = Some(vec![crate::results::ToolCall {
            name: "book_hotel".into(),
            arguments: json!({"nights": 3, "city": "Porto"}),
        }]);
        let req = s.request(&s.metrics[0], &case(), &r).unwrap();
        assert_eq!(
            req.user,
            r#"Calls: [{"name":"book_hotel","arguments":{"city":"Porto","nights":3}}]|"#
        );
        // None asked for is `[]`; nobody could see any is nothing at all.
        r.tool_calls = Some(vec![]);
        assert_eq!(
            s.request(&s.metrics[0], &case(), &r).unwrap().user,
            "Calls: []|"
        );
        r.tool_calls = None;
        assert_eq!(
            s.request(&s.metrics[0], &case(), &r).unwrap().user,
            "Calls: |"
        );
    }

    #[test]
    fn an_unusable_reply_scores_zero_without_asking_the_judge() {
        let s = scorer(
            (1.0, 5.0),
            &[("accuracy", ACCURACY), ("relevancy", RELEVANCY)],
        );
        let mut r = reply("");
        r.error = Some("not JSON".into());
        let score = s.score(&case(), &r);
        assert_eq!(score.value, 0.0);
        assert_eq!(score.metrics["accuracy"], Some(0.0));
        assert_eq!(score.metrics["relevancy"], Some(0.0));
    }

    #[test]
    fn judge_cassettes_are_filed_under_the_judge_then_the_contender() {
        let judge = crate::suite::lineup::judge_contender(
            &Config::default(),
            &JudgeModel {
                provider: "openrouter".into(),
                model: "openai/gpt-4.1-mini".into(),
                temperature: None,
            },
        );
        let contender = crate::suite::lineup::judge_contender(
            &Config::default(),
            &JudgeModel {
                provider: "fake".into(),
                model: "echo".into(),
                temperature: Some(0.5),
            },
        );
        let key = judge_cassette_key(&judge, &contender, "d", "vague/003");
        assert_eq!(
            key.relative_path(),
            std::path::Path::new("judge/openai__gpt-4.1-mini/fake__echo.temp-0.5/d/vague/003.json")
        );
    }
}
