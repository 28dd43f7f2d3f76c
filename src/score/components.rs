//! `kind: components`: the reply's UI payloads, scored apart from its text. It selects the
//! components of one `protocol` and fails, before any check, when the reply reported none
//! (`components: null`), explicitly none (`[]`), none of that protocol, or one of that
//! protocol declaring another `version`, each with a reason saying which. Then it compares
//! them with the case's `expected_components` (`match: exact`, `subset`, or `jsonl`: the
//! JSON lines A2UI sends), or hands them, with the case and its metadata, to a program of
//! your own (`command:`, an exec scorer's protocol). Its metric is a column of its own, so
//! a correct text with a wrong UI fails this metric and no other.

use serde_json::Value;

use super::assertions::json_eq;
use super::exec::{ExecScorer, ExecScorerConfig};
use super::{ScoreFuture, Scorer};
use crate::results::{Component, Diagnostic, MetricDef, Outcome, Reply, Score};
use crate::suite::Case;
use crate::suite::config::{ComponentMatch, MetricConfig};

/// The metric's name when the config gives none.
pub const DEFAULT_NAME: &str = "components";

/// How the selected components are judged.
enum Check {
    /// Against the case's `expected_components`.
    Compare(ComponentMatch),
    /// By your program.
    Exec(Box<ExecScorer>),
}

/// The scorer of `scorer: { kind: components }`.
pub struct ComponentsScorer {
    name: String,
    protocol: String,
    version: String,
    check: Check,
}

/// What the config says of a components scorer.
pub struct ComponentsConfig<'a> {
    /// `name` (default `components`).
    pub name: Option<&'a str>,
    /// `protocol`.
    pub protocol: &'a str,
    /// `version`.
    pub version: &'a str,
    /// `match`.
    pub compare: Option<ComponentMatch>,
    /// `command`, `metrics`, `env`, `pass_env`: your program.
    pub exec: Option<ExecScorerConfig<'a>>,
}

impl ComponentsScorer {
    /// Checks the config (a protocol and a version, `match` or `command` but not both) and
    /// starts nothing yet. `at` names the config in messages; a program runs in `cwd`.
    pub fn new(
        config: ComponentsConfig<'_>,
        at: &str,
        cwd: &std::path::Path,
        timeout: std::time::Duration,
    ) -> Result<ComponentsScorer, String> {
        let name = config.name.unwrap_or(DEFAULT_NAME).to_string();
        if name.trim().is_empty() {
            return Err(format!(
                "{at}: scorer (kind: components): `name` is empty; name its metric, e.g. name: ui"
            ));
        }
        for (key, v) in [("protocol", config.protocol), ("version", config.version)] {
            if v.trim().is_empty() {
                return Err(format!(
                    "{at}: scorer (kind: components): `{key}` is empty; write the components' {key}, e.g. protocol: a2ui, version: \"0.8\""
                ));
            }
        }
        let check = match (config.compare, config.exec) {
            (Some(m), Some(_)) => {
                return Err(format!(
                    "{at}: scorer (kind: components): `match: {}` and `command` both judge the components; keep one",
                    m.as_str()
                ));
            }
            (m, None) => Check::Compare(m.unwrap_or(ComponentMatch::Exact)),
            (None, Some(exec)) => {
                let own;
                let exec = if exec.metrics.is_empty() {
                    own = [MetricConfig {
                        name: name.clone(),
                        description: format!(
                            "the reply's {} {} components, as your program judges them",
                            config.protocol, config.version
                        ),
                        primary: true,
                        higher_is_better: true,
                    }];
                    ExecScorerConfig {
                        metrics: &own,
                        ..exec
                    }
                } else {
                    exec
                };
                Check::Exec(Box::new(ExecScorer::new(exec, at, cwd, timeout)?))
            }
        };
        Ok(ComponentsScorer {
            name,
            protocol: config.protocol.to_string(),
            version: config.version.to_string(),
            check,
        })
    }

    /// `a2ui 0.8`.
    fn kind(&self) -> String {
        format!("{} {}", self.protocol, self.version)
    }

    /// The reply's components of the scorer's protocol, or why there are none to judge:
    /// not reported, explicitly none, none of the protocol, or another declared version.
    fn select<'r>(&self, reply: &'r Reply) -> Result<Vec<&'r Component>, String> {
        let Some(all) = &reply.components else {
            return Err(
                "no components reported (`components` null or absent): the agent must return them beside its text".to_string(),
            );
        };
        if all.is_empty() {
            return Err(
                "the reply reported explicitly no components (`components: []`)".to_string(),
            );
        }
        let ours: Vec<&Component> = all.iter().filter(|c| c.protocol == self.protocol).collect();
        if ours.is_empty() {
            let kinds: Vec<String> = all.iter().map(Component::label).collect();
            return Err(format!(
                "no {} component among the {} reported ({})",
                self.protocol,
                all.len(),
                kinds.join(", ")
            ));
        }
        if let Some((i, other)) = ours
            .iter()
            .enumerate()
            .find(|(_, c)| c.version != self.version)
        {
            return Err(format!(
                "{} component {} of {} declares version {}, not {}",
                self.protocol,
                i + 1,
                ours.len(),
                other.version,
                self.version
            ));
        }
        Ok(ours)
    }

    /// The case's expected components of the scorer's protocol, or why it has none.
    fn expected(&self, case: &Case) -> Result<Vec<Component>, String> {
        let Some(v) = &case.expected_components else {
            return Err(format!(
                "no expected_components: `kind: components` compares the reply's {} components with them; add `expected_components: [{{protocol, version, payload}}]` to the case",
                self.kind()
            ));
        };
        let all: Vec<Component> = serde_json::from_value(v.clone()).map_err(|e| {
            format!("expected_components must be a list of {{protocol, version, payload}}: {e}")
        })?;
        let ours: Vec<Component> = all
            .into_iter()
            .filter(|c| c.protocol == self.protocol)
            .collect();
        if ours.is_empty() {
            return Err(format!(
                "expected_components has no {} component to compare with",
                self.protocol
            ));
        }
        Ok(ours)
    }

    /// What the check wants, as the diagnostic says it: `a2ui 0.8 components: JSON lines
    /// equal to expected_components`.
    fn wanted(&self, m: ComponentMatch) -> String {
        let how = match m {
            ComponentMatch::Exact => "payloads equal to expected_components",
            ComponentMatch::Subset => "payloads holding expected_components (a subset)",
            ComponentMatch::Jsonl => "JSON lines equal to expected_components",
        };
        format!("{} components: {how}", self.kind())
    }

    /// A score of every metric at `value`, and a diagnostic when it failed.
    fn verdict(&self, failed: Option<(String, String)>) -> Score {
        let value = if failed.is_some() { 0.0 } else { 1.0 };
        let declared = self.metrics();
        // Named by the primary metric (first), so the case's failure says which check.
        let field = declared
            .first()
            .map_or_else(|| self.name.clone(), |m| m.name.clone());
        let metrics = declared
            .into_iter()
            .map(|m| (m.name, Some(value)))
            .collect();
        let passed = failed.is_none();
        Score {
            value,
            metrics,
            diagnostics: failed
                .into_iter()
                .map(|(want, got)| Diagnostic {
                    field: field.clone(),
                    want: Value::String(want),
                    got: Value::String(got),
                    // A check that does not hold fails the case, like an assertion.
                    outcome: Outcome::Failed,
                })
                .collect(),
            passed: Some(passed),
        }
    }

    /// The built-in comparison's verdict.
    fn compare(&self, m: ComponentMatch, case: &Case, reply: &Reply) -> Score {
        let want = self.wanted(m);
        let got = match self.select(reply) {
            Ok(c) => c,
            Err(why) => return self.verdict(Some((want, why))),
        };
        let expected = match self.expected(case) {
            Ok(e) => e,
            // `verify` refuses such a case before the run; said, never passed.
            Err(why) => return self.verdict(Some((want, why))),
        };
        let failed = match m {
            ComponentMatch::Exact | ComponentMatch::Subset => {
                compare_payloads(&expected, &got, m == ComponentMatch::Subset)
            }
            ComponentMatch::Jsonl => compare_lines(&self.protocol, &expected, &got),
        };
        self.verdict(failed.map(|why| (want, why)))
    }
}

/// Exact or subset: payload by payload, in order.
fn compare_payloads(expected: &[Component], got: &[&Component], subset: bool) -> Option<String> {
    if got.len() != expected.len() {
        return Some(format!(
            "{} components, expected {}",
            got.len(),
            expected.len()
        ));
    }
    for (i, (w, g)) in expected.iter().zip(got).enumerate() {
        if let Some(d) = difference(&w.payload, &g.payload, subset, String::new()) {
            return Some(format!("component {} of {}: {d}", i + 1, got.len()));
        }
    }
    None
}

/// JSON lines: every selected component's messages, in order, against the expected ones.
fn compare_lines(protocol: &str, expected: &[Component], got: &[&Component]) -> Option<String> {
    let lines = |cs: &mut dyn Iterator<Item = &Component>, whose: &str| {
        let mut out = Vec::new();
        for (i, c) in cs.enumerate() {
            let m = Component::json_lines(&c.payload)
                .map_err(|e| format!("{whose} {protocol} component {}: {e}", i + 1))?;
            out.extend(m);
        }
        Ok::<_, String>(out)
    };
    let want = match lines(&mut expected.iter(), "expected_components'") {
        Ok(w) => w,
        Err(e) => return Some(e),
    };
    let have = match lines(&mut got.iter().copied(), "the reply's") {
        Ok(h) => h,
        Err(e) => return Some(e),
    };
    for (i, (w, h)) in want.iter().zip(&have).enumerate() {
        if let Some(d) = difference(w, h, false, String::new()) {
            return Some(format!("message {} of {}: {d}", i + 1, have.len()));
        }
    }
    (want.len() != have.len()).then(|| format!("{} messages, expected {}", have.len(), want.len()))
}

/// Where `got` first differs from `want`, as a JSON pointer and the two values (`subset`:
/// keys `want` does not name are allowed); `None` when they agree.
fn difference(want: &Value, got: &Value, subset: bool, at: String) -> Option<String> {
    let here = || {
        if at.is_empty() {
            "/".to_string()
        } else {
            at.clone()
        }
    };
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let path = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match g.get(k) {
                    None => return Some(format!("{path} is missing")),
                    Some(gv) => {
                        if let Some(d) = difference(wv, gv, subset, path) {
                            return Some(d);
                        }
                    }
                }
            }
            if !subset && let Some(k) = g.keys().find(|k| !w.contains_key(*k)) {
                return Some(format!("{at}/{k} is not expected"));
            }
            None
        }
        (Value::Array(w), Value::Array(g)) => {
            if w.len() != g.len() {
                return Some(format!(
                    "{} has {} items, expected {}",
                    here(),
                    g.len(),
                    w.len()
                ));
            }
            w.iter()
                .zip(g)
                .enumerate()
                .find_map(|(i, (wv, gv))| difference(wv, gv, subset, format!("{at}/{i}")))
        }
        _ if json_eq(want, got) => None,
        _ => Some(format!(
            "{} is {}, expected {}",
            here(),
            shown(got),
            shown(want)
        )),
    }
}

/// A value in a reason: its JSON, cut at 80 characters.
fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() <= 80 {
        return s;
    }
    let cut: String = s.chars().take(80).collect();
    format!("{cut}…")
}

impl Scorer for ComponentsScorer {
    fn metrics(&self) -> Vec<MetricDef> {
        match &self.check {
            Check::Compare(m) => vec![MetricDef {
                name: self.name.clone(),
                description: format!("the reply's {} ({} match)", self.wanted(*m), m.as_str()),
                primary: true,
                higher_is_better: true,
            }],
            Check::Exec(e) => e.metrics(),
        }
    }

    fn score(&self, case: &Case, reply: &Reply) -> Score {
        match &self.check {
            Check::Compare(m) => self.compare(*m, case, reply),
            Check::Exec(e) => match self.select(reply) {
                Err(why) => self.verdict(Some((self.exec_wanted(), why))),
                Ok(ours) => e.score(case, &only(reply, ours)),
            },
        }
    }

    fn score_checked<'a>(&'a self, case: &'a Case, reply: &'a Reply) -> ScoreFuture<'a> {
        Box::pin(async move {
            match &self.check {
                Check::Compare(m) => Ok(self.compare(*m, case, reply)),
                Check::Exec(e) => match self.select(reply) {
                    Err(why) => Ok(self.verdict(Some((self.exec_wanted(), why)))),
                    Ok(ours) => {
                        let reply = only(reply, ours);
                        e.score_checked(case, &reply).await
                    }
                },
            }
        })
    }

    fn verify(&self, case: &Case) -> Vec<String> {
        match &self.check {
            Check::Compare(ComponentMatch::Jsonl) => match self.expected(case) {
                Err(e) => vec![e],
                Ok(expected) => expected
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| {
                        Component::json_lines(&c.payload).err().map(|e| {
                            format!(
                                "expected_components' {} component {}: {e}",
                                self.protocol,
                                i + 1
                            )
                        })
                    })
                    .collect(),
            },
            Check::Compare(_) => self.expected(case).err().into_iter().collect(),
            Check::Exec(e) => e.verify(case),
        }
    }

    fn summary(&self, _case: &Case) -> String {
        match &self.check {
            Check::Compare(m) => format!("{} components ({})", self.kind(), m.as_str()),
            Check::Exec(_) => format!("{} components (exec)", self.kind()),
        }
    }
}

impl ComponentsScorer {
    /// What an exec check wants, as its diagnostic says it.
    fn exec_wanted(&self) -> String {
        format!("{} components, judged by scorer.command", self.kind())
    }
}

/// The reply with only the selected components: what your program is handed.
fn only(reply: &Reply, ours: Vec<&Component>) -> Reply {
    Reply {
        components: Some(ours.into_iter().cloned().collect()),
        ..reply.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scorer(m: ComponentMatch) -> ComponentsScorer {
        ComponentsScorer::new(
            ComponentsConfig {
                name: Some("ui"),
                protocol: "a2ui",
                version: "0.8",
                compare: Some(m),
                exec: None,
            },
            "c.yml",
            std::path::Path::new("."),
            std::time::Duration::from_secs(1),
        )
        .unwrap()
    }

    fn case(expected: Option<Value>) -> Case {
        Case {
            id: "c".into(),
            dataset: "d".into(),
            variant: "c".into(),
            input: crate::suite::CaseInput::Text("hi".into()),
            expected: None,
            expect: None,
            expected_components: expected,
            tags: vec![],
            weight: 1.0,
            metadata: Default::default(),
            minimum_scores: Default::default(),
            mock_response: None,
            source: "cases.jsonl".into(),
            line: Some(1),
        }
    }

    fn reply(components: Option<Value>) -> Reply {
        Reply {
            output: Some(json!("Returns within 30 days")),
            components: components.map(|c| serde_json::from_value(c).unwrap()),
            ..Reply::default()
        }
    }

    const LINES: &str = "{\"beginRendering\": {\"surfaceId\": \"s\"}}\n{\"surfaceUpdate\": {\"text\": \"30 days\"}}\n";

    fn a2ui(version: &str, payload: Value) -> Value {
        json!({"protocol": "a2ui", "version": version, "payload": payload})
    }

    /// The metric and the reason of a score.
    fn judged(s: &Score) -> (f64, Option<bool>, String) {
        let why = s
            .diagnostics
            .first()
            .map(|d| d.got.as_str().unwrap().to_string())
            .unwrap_or_default();
        (s.metrics["ui"].unwrap(), s.passed, why)
    }

    #[test]
    fn null_and_empty_components_fail_before_any_check_each_with_its_own_reason() {
        let s = scorer(ComponentMatch::Jsonl);
        let c = case(Some(json!([a2ui("0.8", json!(LINES))])));
        let (v, passed, null) = judged(&s.score(&c, &reply(None)));
        assert_eq!((v, passed), (0.0, Some(false)));
        assert!(
            null.starts_with("no components reported (`components` null or absent)"),
            "{null}"
        );
        let (v, _, empty) = judged(&s.score(&c, &reply(Some(json!([])))));
        assert_eq!(v, 0.0);
        assert_eq!(
            empty,
            "the reply reported explicitly no components (`components: []`)"
        );
        assert_ne!(
            null, empty,
            "null (not reported) is never [] (explicitly none)"
        );
        let (_, _, other) = judged(&s.score(
            &c,
            &reply(Some(
                json!([{"protocol": "html", "version": "5", "payload": "<p>"}]),
            )),
        ));
        assert_eq!(other, "no a2ui component among the 1 reported (html 5)");
        let (_, _, version) =
            judged(&s.score(&c, &reply(Some(json!([a2ui("0.9", json!(LINES))])))));
        assert_eq!(
            version,
            "a2ui component 1 of 1 declares version 0.9, not 0.8"
        );
    }

    #[test]
    fn json_lines_compare_message_by_message_and_name_the_first_difference() {
        let s = scorer(ComponentMatch::Jsonl);
        // Expected as text or as parsed messages: the same.
        for expected in [
            json!(LINES),
            json!([{"beginRendering": {"surfaceId": "s"}}, {"surfaceUpdate": {"text": "30 days"}}]),
        ] {
            let c = case(Some(json!([a2ui("0.8", expected)])));
            // Spacing and key order aside.
            let same = "{\"beginRendering\":{\"surfaceId\":\"s\"}}\n\n{\"surfaceUpdate\":{\"text\":\"30 days\"}}";
            assert_eq!(
                judged(&s.score(&c, &reply(Some(json!([a2ui("0.8", json!(same))]))))).0,
                1.0
            );
            let wrong = LINES.replace("30 days", "7 days");
            let (v, passed, why) =
                judged(&s.score(&c, &reply(Some(json!([a2ui("0.8", json!(wrong))])))));
            assert_eq!((v, passed), (0.0, Some(false)));
            assert_eq!(
                why,
                "message 2 of 2: /surfaceUpdate/text is \"7 days\", expected \"30 days\""
            );
        }
        let c = case(Some(json!([a2ui("0.8", json!(LINES))])));
        let (_, _, why) = judged(&s.score(
            &c,
            &reply(Some(json!([a2ui("0.8", json!("{\"a\": 1}\nnope"))]))),
        ));
        assert!(
            why.starts_with("the reply's a2ui component 1: its line 2 is not JSON"),
            "{why}"
        );
        let short = LINES.lines().next().unwrap();
        let (_, _, why) = judged(&s.score(&c, &reply(Some(json!([a2ui("0.8", json!(short))])))));
        assert_eq!(why, "1 messages, expected 2");
    }

    #[test]
    fn exact_and_subset_compare_payloads_as_json() {
        let c = case(Some(json!([a2ui(
            "0.8",
            json!({"card": {"title": "Returns", "days": 30}})
        )])));
        let full = reply(Some(json!([a2ui(
            "0.8",
            json!({"card": {"title": "Returns", "days": 30.0, "icon": "box"}})
        )])));
        let (_, _, why) = judged(&scorer(ComponentMatch::Exact).score(&c, &full));
        assert_eq!(why, "component 1 of 1: /card/icon is not expected");
        assert_eq!(
            judged(&scorer(ComponentMatch::Subset).score(&c, &full)).0,
            1.0
        );
        let wrong = reply(Some(json!([a2ui(
            "0.8",
            json!({"card": {"title": "Returns", "days": 7}})
        )])));
        let (_, _, why) = judged(&scorer(ComponentMatch::Subset).score(&c, &wrong));
        assert_eq!(why, "component 1 of 1: /card/days is 7, expected 30");
    }

    #[test]
    fn a_case_without_expected_components_is_refused_before_the_run() {
        let s = scorer(ComponentMatch::Exact);
        assert!(s.verify(&case(None))[0].starts_with("no expected_components"));
        assert!(
            s.verify(&case(Some(
                json!([{"protocol": "html", "version": "5", "payload": 1}])
            )))[0]
                .starts_with("expected_components has no a2ui component")
        );
        assert!(
            s.verify(&case(Some(json!({"protocol": "a2ui"}))))[0]
                .starts_with("expected_components must be a list")
        );
        let jsonl = scorer(ComponentMatch::Jsonl);
        assert!(
            jsonl.verify(&case(Some(json!([a2ui("0.8", json!("not json"))]))))[0]
                .starts_with("expected_components' a2ui component 1: its line 1 is not JSON")
        );
        assert!(
            s.verify(&case(Some(json!([a2ui("0.8", json!({}))]))))
                .is_empty()
        );
    }
}
