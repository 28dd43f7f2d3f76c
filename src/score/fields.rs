//! The `fields` scorer: structured extraction graded field by field against a schema.
//!
//! Not all mistakes are equal. Each field of the schema ends in one of five outcomes, worth
//! a fixed share of the point: correct 1.0, missed 0.2 (the text answers it, the reply left
//! it empty), hallucinated 0.15 (the text never answers it, the reply answered anyway),
//! incorrect 0.1 (an allowed value, the wrong one) and invalid 0 (a value the schema does
//! not allow). Missing is the least bad mistake because a form just asks again; inventing a
//! fact is worse; garbage is worst.
//!
//! Comparison rules: enum, multi_enum and string values are compared trimmed and
//! case-insensitively (a multi_enum as a set); integers and numbers by numeric value (`1`
//! equals `1.0`); booleans strictly. A value of the wrong JSON type is invalid, a numeric
//! string such as `"3"` included. Reply keys the schema does not declare are ignored.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::Scorer;
use crate::results::{Diagnostic, MetricDef, Reply, Score};
use crate::suggest::did_you_mean;
use crate::suite::{Case, FieldSpec, FieldType, Schema};

/// The label of the diagnostic that stands for the whole reply when it is unusable.
const REPLY_FIELD: &str = "(reply)";

/// How one field of a reply turned out: the result model's [`Outcome`], of which a field
/// is one of the first five (correct, missed, hallucinated, incorrect, invalid).
pub use crate::results::Outcome;

impl Outcome {
    /// The share of the point this outcome is worth (nothing, for an outcome no field has).
    pub fn worth(&self) -> f64 {
        match self {
            Outcome::Correct => 1.0,
            Outcome::Missed => 0.2,
            Outcome::Hallucinated => 0.15,
            Outcome::Incorrect => 0.1,
            Outcome::Invalid | Outcome::Failed | Outcome::Other(_) => 0.0,
        }
    }
}

/// Grades a JSON object reply field by field against a [`Schema`].
#[derive(Debug, Clone)]
pub struct FieldsScorer {
    schema: Schema,
}

impl FieldsScorer {
    pub fn new(schema: Schema) -> Self {
        FieldsScorer { schema }
    }

    /// The outcome of each schema field, in schema order, for an expected object and the
    /// reply's object. Keys missing on either side count as null.
    pub fn outcomes(
        &self,
        expected: &Map<String, Value>,
        got: &Map<String, Value>,
    ) -> Vec<(String, Outcome)> {
        self.schema
            .iter()
            .map(|(name, spec)| {
                let want = expected.get(name).unwrap_or(&Value::Null);
                let have = got.get(name).unwrap_or(&Value::Null);
                (name.clone(), judge(spec, want, have))
            })
            .collect()
    }

    /// What `verify` and `summary` call the expected answer: the file for a case on disk,
    /// the key for a JSONL line.
    fn expected_name(case: &Case) -> &'static str {
        if case.line.is_some() {
            "`expected`"
        } else {
            "expected.json"
        }
    }

    /// The score of a reply that cannot be read as an object: every field invalid.
    fn unusable(&self, case: &Case, got: Value) -> Score {
        let mut metrics = BTreeMap::new();
        metrics.insert("field_accuracy".to_string(), Some(0.0));
        metrics.insert("exact".to_string(), Some(0.0));
        metrics.insert("hallucinated_rate".to_string(), Some(0.0));
        metrics.insert("invalid_rate".to_string(), Some(1.0));
        // Of the fields the text never answers, an unusable reply left none null on purpose:
        // restraint is 0 (none when no field is expected null, as for any reply).
        let expects_null = match &case.expected {
            Some(Value::Object(m)) => self
                .schema
                .keys()
                .any(|k| m.get(k).is_none_or(Value::is_null)),
            _ => false,
        };
        metrics.insert("restraint".to_string(), expects_null.then_some(0.0));
        Score {
            value: 0.0,
            metrics,
            diagnostics: vec![Diagnostic {
                field: REPLY_FIELD.to_string(),
                want: Value::String("a JSON object with the schema's fields".to_string()),
                got,
                outcome: Outcome::Invalid,
            }],
            passed: None,
        }
    }
}

/// The reply's object: the parsed output, or the text (a string output, else the raw text)
/// when it is exactly a JSON object. Nothing more lenient: parsing is the adapter's job, and
/// what production cannot parse must count as invalid.
fn reply_object(reply: &Reply) -> Option<Map<String, Value>> {
    let text = match &reply.output {
        Some(Value::Object(map)) => return Some(map.clone()),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return None,
        None => reply.raw.as_deref()?,
    };
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// A field value reduced to what comparison looks at.
#[derive(Debug, Clone, PartialEq)]
enum Norm {
    Bool(bool),
    Num(f64),
    Text(String),
    Set(BTreeSet<String>),
}

fn fold(s: &str) -> String {
    s.trim().to_lowercase()
}

/// Reduces a non-null value the schema allows, or says why it does not allow it.
fn normalize(spec: &FieldSpec, value: &Value) -> Result<Norm, String> {
    let wrong_type = |what: &str| format!("{value} is not {what}");
    match spec.kind {
        FieldType::Boolean => value
            .as_bool()
            .map(Norm::Bool)
            .ok_or_else(|| wrong_type("a boolean")),
        FieldType::Integer => match value.as_f64() {
            Some(n) if value.is_number() && n.is_finite() && n.fract() == 0.0 => Ok(Norm::Num(n)),
            _ => Err(wrong_type("an integer")),
        },
        FieldType::Number => match value.as_f64() {
            Some(n) if n.is_finite() => Ok(Norm::Num(n)),
            _ => Err(wrong_type("a number")),
        },
        FieldType::String => value
            .as_str()
            .map(|s| Norm::Text(fold(s)))
            .ok_or_else(|| wrong_type("a string")),
        FieldType::Enum => {
            let s = value.as_str().ok_or_else(|| {
                format!(
                    "{value} is {}, not one of {}",
                    crate::score::kind_of(value),
                    spec.values.join(", ")
                )
            })?;
            allowed(spec, s).map(Norm::Text)
        }
        FieldType::MultiEnum => {
            let items = value.as_array().ok_or_else(|| {
                format!(
                    "{value} is {}, not a list of {}",
                    crate::score::kind_of(value),
                    spec.values.join(", ")
                )
            })?;
            let mut set = BTreeSet::new();
            for item in items {
                let s = item.as_str().ok_or_else(|| {
                    format!(
                        "{item} is {}, not one of {}",
                        crate::score::kind_of(item),
                        spec.values.join(", ")
                    )
                })?;
                set.insert(allowed(spec, s)?);
            }
            Ok(Norm::Set(set))
        }
    }
}

/// The folded allowed value `s` names, or why it names none.
fn allowed(spec: &FieldSpec, s: &str) -> Result<String, String> {
    let folded = fold(s);
    if spec.values.iter().any(|v| fold(v) == folded) {
        Ok(folded)
    } else {
        Err(format!("{:?} is not one of {}", s, spec.values.join(", ")))
    }
}

/// The outcome of one field.
fn judge(spec: &FieldSpec, want: &Value, got: &Value) -> Outcome {
    let got = if got.is_null() {
        None
    } else {
        match normalize(spec, got) {
            Ok(n) => Some(n),
            Err(_) => return Outcome::Invalid,
        }
    };
    match (want.is_null(), got) {
        (true, None) => Outcome::Correct,
        (false, None) => Outcome::Missed,
        (true, Some(_)) => Outcome::Hallucinated,
        // An expected value the schema does not allow can never be matched; `verify` says so.
        (false, Some(got)) => match normalize(spec, want) {
            Ok(want) if want == got => Outcome::Correct,
            _ => Outcome::Incorrect,
        },
    }
}

impl Scorer for FieldsScorer {
    fn metrics(&self) -> Vec<MetricDef> {
        let def =
            |name: &str, description: &str, primary: bool, higher_is_better: bool| MetricDef {
                name: name.to_string(),
                description: description.to_string(),
                primary,
                higher_is_better,
            };
        vec![
            def(
                "field_accuracy",
                "Mean worth of the schema's fields: correct 1, missed 0.2, hallucinated 0.15, \
                 incorrect 0.1, invalid 0",
                true,
                true,
            ),
            def(
                "exact",
                "1 when every field is correct, else 0; its mean is the share of replies \
                 extracted perfectly",
                false,
                true,
            ),
            def(
                "hallucinated_rate",
                "Share of fields the reply filled in although the text never answers them \
                 (expected null, got a value)",
                false,
                false,
            ),
            def(
                "invalid_rate",
                "Share of fields with a value the schema does not allow (off the list, wrong \
                 type); every field of an unusable reply counts",
                false,
                false,
            ),
            def(
                "restraint",
                "Of the fields the text never answers (expected null), the share the reply \
                 left null; none when every field is answered",
                false,
                true,
            ),
        ]
    }

    fn score(&self, case: &Case, reply: &Reply) -> Score {
        if let Some(error) = &reply.error {
            return self.unusable(case, Value::String(error.clone()));
        }
        let Some(got) = reply_object(reply) else {
            let shown = reply
                .output
                .clone()
                .or_else(|| reply.raw.clone().map(Value::String))
                .unwrap_or(Value::Null);
            return self.unusable(case, shown);
        };
        let empty = Map::new();
        let expected = match &case.expected {
            Some(Value::Object(map)) => map,
            // `verify` reports a missing or malformed expected answer; score as all-null.
            _ => &empty,
        };
        let outcomes = self.outcomes(expected, &got);
        let total = outcomes.len();
        if total == 0 {
            let mut metrics: BTreeMap<String, Option<f64>> =
                self.metrics().into_iter().map(|m| (m.name, None)).collect();
            metrics.insert("field_accuracy".to_string(), Some(0.0));
            return Score {
                value: 0.0,
                metrics,
                diagnostics: vec![Diagnostic {
                    field: "(schema)".to_string(),
                    want: Value::String("at least one field".to_string()),
                    got: Value::Null,
                    outcome: Outcome::Invalid,
                }],
                passed: None,
            };
        }
        let count = |o: Outcome| outcomes.iter().filter(|(_, x)| *x == o).count();
        let n = total as f64;
        let accuracy = outcomes.iter().map(|(_, o)| o.worth()).sum::<f64>() / n;
        let expected_null: Vec<&String> = self
            .schema
            .keys()
            .filter(|k| expected.get(*k).is_none_or(Value::is_null))
            .collect();
        let restraint = if expected_null.is_empty() {
            None
        } else {
            let kept = expected_null
                .iter()
                .filter(|k| got.get(k.as_str()).is_none_or(Value::is_null))
                .count();
            Some(kept as f64 / expected_null.len() as f64)
        };
        let diagnostics = outcomes
            .iter()
            .filter(|(_, o)| *o != Outcome::Correct)
            .map(|(name, o)| Diagnostic {
                field: name.clone(),
                want: expected.get(name).cloned().unwrap_or(Value::Null),
                got: got.get(name).cloned().unwrap_or(Value::Null),
                outcome: o.clone(),
            })
            .collect();
        let mut metrics = BTreeMap::new();
        metrics.insert("field_accuracy".to_string(), Some(accuracy));
        let exact = if count(Outcome::Correct) == total {
            1.0
        } else {
            0.0
        };
        metrics.insert("exact".to_string(), Some(exact));
        metrics.insert(
            "hallucinated_rate".to_string(),
            Some(count(Outcome::Hallucinated) as f64 / n),
        );
        metrics.insert(
            "invalid_rate".to_string(),
            Some(count(Outcome::Invalid) as f64 / n),
        );
        metrics.insert("restraint".to_string(), restraint);
        Score {
            value: accuracy,
            metrics,
            diagnostics,
            passed: None,
        }
    }

    fn verify(&self, case: &Case) -> Vec<String> {
        let name = Self::expected_name(case);
        let expected = match &case.expected {
            None => return vec![format!("{name} is missing")],
            Some(Value::Object(map)) => map,
            Some(other) => {
                return vec![format!(
                    "{name} must be a JSON object with one key per schema field, not {}",
                    crate::score::kind_of(other)
                )];
            }
        };
        let mut problems = Vec::new();
        for (field, spec) in &self.schema {
            match expected.get(field) {
                None => problems.push(format!(
                    "`{field}` is missing from {name}; set it to null if the text never answers it"
                )),
                Some(Value::Null) if !spec.nullable => problems.push(format!(
                    "{field}: null is not allowed (the schema says nullable: false)"
                )),
                Some(Value::Null) => {}
                Some(value) => {
                    if let Err(why) = normalize(spec, value) {
                        problems.push(format!("{field}: {why}"));
                    }
                }
            }
        }
        let fields: Vec<&str> = self.schema.keys().map(String::as_str).collect();
        for key in expected.keys().filter(|k| !self.schema.contains_key(*k)) {
            let hint = match did_you_mean(key, &fields) {
                Some(s) => format!(" (did you mean `{s}`?)"),
                None => format!("; the fields are {}", fields.join(", ")),
            };
            problems.push(format!(
                "`{key}` in {name} is not a field of the schema{hint}"
            ));
        }
        problems
    }

    fn summary(&self, case: &Case) -> String {
        let answered = match &case.expected {
            Some(Value::Object(map)) => self
                .schema
                .keys()
                .filter(|k| map.get(*k).is_some_and(|v| !v.is_null()))
                .count(),
            _ => 0,
        };
        format!("{answered}/{} answered", self.schema.len())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;
    use crate::suite::CaseInput;

    fn spec(kind: FieldType) -> FieldSpec {
        FieldSpec {
            kind,
            values: vec![],
            nullable: true,
            description: None,
        }
    }

    fn enum_spec(kind: FieldType, values: &[&str]) -> FieldSpec {
        FieldSpec {
            values: values.iter().map(|v| v.to_string()).collect(),
            ..spec(kind)
        }
    }

    fn tax_schema() -> Schema {
        let mut s = Schema::new();
        s.insert(
            "filing_status".into(),
            enum_spec(
                FieldType::Enum,
                &[
                    "single",
                    "married_jointly",
                    "married_separately",
                    "head_of_household",
                ],
            ),
        );
        s.insert("dependents".into(), spec(FieldType::Integer));
        s.insert("self_employed".into(), spec(FieldType::Boolean));
        s.insert("rental_properties".into(), spec(FieldType::Integer));
        s.insert("sold_investments".into(), spec(FieldType::Boolean));
        s.insert("owns_business_entity".into(), spec(FieldType::Boolean));
        s.insert("multi_state".into(), spec(FieldType::Boolean));
        s.insert("irs_letter".into(), spec(FieldType::Boolean));
        s
    }

    fn vague_expected() -> Value {
        json!({
            "filing_status": null, "dependents": null, "self_employed": true,
            "rental_properties": null, "sold_investments": null,
            "owns_business_entity": null, "multi_state": null, "irs_letter": true
        })
    }

    fn case(expected: Option<Value>) -> Case {
        Case {
            id: "vague".into(),
            dataset: "tax".into(),
            variant: "vague".into(),
            input: CaseInput::Text("Got married in June.".into()),
            expected,
            expect: None,
            tags: vec![],
            weight: 1.0,
            metadata: Map::new(),
            minimum_scores: BTreeMap::new(),
            mock_response: None,
            source: PathBuf::from("cases/vague/input.txt"),
            line: None,
            expected_components: None,
        }
    }

    fn reply(output: Value) -> Reply {
        Reply {
            output: Some(output),
            ..Reply::default()
        }
    }

    fn metric(score: &Score, name: &str) -> Option<f64> {
        score.metrics.get(name).copied().flatten()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// One field of one type: the outcome for an expected and a got value.
    fn outcome(spec: FieldSpec, want: Value, got: Value) -> Outcome {
        judge(&spec, &want, &got)
    }

    #[test]
    fn outcome_worths_are_the_blogs() {
        let worths: Vec<f64> = [
            Outcome::Correct,
            Outcome::Missed,
            Outcome::Hallucinated,
            Outcome::Incorrect,
            Outcome::Invalid,
        ]
        .iter()
        .map(|o| o.worth())
        .collect();
        assert_eq!(worths, vec![1.0, 0.2, 0.15, 0.1, 0.0]);
    }

    #[test]
    fn boolean_outcomes() {
        let b = || spec(FieldType::Boolean);
        assert_eq!(outcome(b(), json!(true), json!(true)), Outcome::Correct);
        assert_eq!(outcome(b(), json!(null), json!(null)), Outcome::Correct);
        assert_eq!(outcome(b(), json!(true), json!(null)), Outcome::Missed);
        assert_eq!(
            outcome(b(), json!(null), json!(false)),
            Outcome::Hallucinated
        );
        assert_eq!(outcome(b(), json!(true), json!(false)), Outcome::Incorrect);
        assert_eq!(outcome(b(), json!(true), json!("true")), Outcome::Invalid);
        assert_eq!(outcome(b(), json!(true), json!(1)), Outcome::Invalid);
    }

    #[test]
    fn integer_outcomes() {
        let i = || spec(FieldType::Integer);
        assert_eq!(outcome(i(), json!(2), json!(2)), Outcome::Correct);
        assert_eq!(outcome(i(), json!(1), json!(1.0)), Outcome::Correct);
        assert_eq!(outcome(i(), json!(2), json!(null)), Outcome::Missed);
        assert_eq!(outcome(i(), json!(null), json!(0)), Outcome::Hallucinated);
        assert_eq!(outcome(i(), json!(2), json!(3)), Outcome::Incorrect);
        assert_eq!(outcome(i(), json!(2), json!(1.5)), Outcome::Invalid);
        assert_eq!(outcome(i(), json!(3), json!("3")), Outcome::Invalid);
    }

    #[test]
    fn number_outcomes() {
        let n = || spec(FieldType::Number);
        assert_eq!(outcome(n(), json!(2.5), json!(2.5)), Outcome::Correct);
        assert_eq!(outcome(n(), json!(2), json!(2.0)), Outcome::Correct);
        assert_eq!(outcome(n(), json!(2.5), json!(null)), Outcome::Missed);
        assert_eq!(outcome(n(), json!(null), json!(1.5)), Outcome::Hallucinated);
        assert_eq!(outcome(n(), json!(2.5), json!(2.25)), Outcome::Incorrect);
        assert_eq!(outcome(n(), json!(2.5), json!("2.5")), Outcome::Invalid);
    }

    #[test]
    fn string_outcomes() {
        let s = || spec(FieldType::String);
        assert_eq!(
            outcome(s(), json!("Acme Inc"), json!("  acme inc ")),
            Outcome::Correct
        );
        assert_eq!(outcome(s(), json!("Acme"), json!(null)), Outcome::Missed);
        assert_eq!(
            outcome(s(), json!(null), json!("Acme")),
            Outcome::Hallucinated
        );
        assert_eq!(
            outcome(s(), json!("Acme"), json!("Globex")),
            Outcome::Incorrect
        );
        assert_eq!(outcome(s(), json!("7"), json!(7)), Outcome::Invalid);
    }

    #[test]
    fn enum_outcomes() {
        let e = || enum_spec(FieldType::Enum, &["single", "married_jointly"]);
        assert_eq!(
            outcome(e(), json!("single"), json!(" Single ")),
            Outcome::Correct
        );
        assert_eq!(outcome(e(), json!("single"), json!(null)), Outcome::Missed);
        assert_eq!(
            outcome(e(), json!(null), json!("married_jointly")),
            Outcome::Hallucinated
        );
        assert_eq!(
            outcome(e(), json!("single"), json!("married_jointly")),
            Outcome::Incorrect
        );
        assert_eq!(
            outcome(e(), json!("single"), json!("divorced")),
            Outcome::Invalid
        );
        assert_eq!(outcome(e(), json!("single"), json!(1)), Outcome::Invalid);
        // An invalid value is invalid even where the text never answers the field.
        assert_eq!(
            outcome(e(), json!(null), json!("divorced")),
            Outcome::Invalid
        );
    }

    #[test]
    fn multi_enum_outcomes() {
        let m = || enum_spec(FieldType::MultiEnum, &["email", "phone", "text"]);
        assert_eq!(
            outcome(
                m(),
                json!(["email", "phone"]),
                json!(["PHONE ", "email", "email"])
            ),
            Outcome::Correct
        );
        assert_eq!(outcome(m(), json!(["email"]), json!(null)), Outcome::Missed);
        assert_eq!(
            outcome(m(), json!(null), json!(["text"])),
            Outcome::Hallucinated
        );
        assert_eq!(
            outcome(m(), json!(["email"]), json!(["email", "text"])),
            Outcome::Incorrect
        );
        assert_eq!(
            outcome(m(), json!(["email"]), json!(["fax"])),
            Outcome::Invalid
        );
        assert_eq!(
            outcome(m(), json!(["email"]), json!("email")),
            Outcome::Invalid
        );
    }

    #[test]
    fn non_nullable_field_left_null_is_missed() {
        let s = FieldSpec {
            nullable: false,
            ..spec(FieldType::Integer)
        };
        assert_eq!(outcome(s, json!(2), json!(null)), Outcome::Missed);
    }

    #[test]
    fn vague_tax_case_with_two_invented_fields_scores_0_7875() {
        let scorer = FieldsScorer::new(tax_schema());
        let mut got = vague_expected();
        got["filing_status"] = json!("married_jointly");
        got["dependents"] = json!(0);
        let score = scorer.score(&case(Some(vague_expected())), &reply(got));
        assert!(close(score.value, 0.7875), "{}", score.value);
        assert!(close(
            metric(&score, "field_accuracy").unwrap_or(-1.0),
            0.7875
        ));
        assert_eq!(metric(&score, "exact"), Some(0.0));
        assert!(close(
            metric(&score, "hallucinated_rate").unwrap_or(-1.0),
            0.25
        ));
        assert_eq!(metric(&score, "invalid_rate"), Some(0.0));
        assert!(close(
            metric(&score, "restraint").unwrap_or(-1.0),
            4.0 / 6.0
        ));
        assert_eq!(
            score.diagnostics,
            vec![
                Diagnostic {
                    field: "filing_status".into(),
                    want: Value::Null,
                    got: json!("married_jointly"),
                    outcome: Outcome::Hallucinated,
                },
                Diagnostic {
                    field: "dependents".into(),
                    want: Value::Null,
                    got: json!(0),
                    outcome: Outcome::Hallucinated,
                },
            ]
        );
    }

    #[test]
    fn a_perfect_reply_scores_one_with_no_diagnostics() {
        let scorer = FieldsScorer::new(tax_schema());
        let mut got = vague_expected();
        got["extra_key_the_schema_ignores"] = json!("whatever");
        let score = scorer.score(&case(Some(vague_expected())), &reply(got));
        assert_eq!(score.value, 1.0);
        assert_eq!(metric(&score, "exact"), Some(1.0));
        assert_eq!(metric(&score, "restraint"), Some(1.0));
        assert!(score.diagnostics.is_empty());
    }

    #[test]
    fn absent_keys_count_as_null() {
        let scorer = FieldsScorer::new(tax_schema());
        let score = scorer.score(
            &case(Some(vague_expected())),
            &reply(json!({"self_employed": true, "irs_letter": true})),
        );
        assert_eq!(score.value, 1.0);
        let score = scorer.score(
            &case(Some(vague_expected())),
            &reply(json!({"self_employed": true})),
        );
        assert!(close(score.value, 7.2 / 8.0));
        assert_eq!(score.diagnostics[0].outcome, Outcome::Missed);
        assert_eq!(score.diagnostics[0].field, "irs_letter");
    }

    #[test]
    fn restraint_is_none_when_every_field_is_answered() {
        let mut schema = Schema::new();
        schema.insert("dependents".into(), spec(FieldType::Integer));
        let scorer = FieldsScorer::new(schema);
        let score = scorer.score(
            &case(Some(json!({"dependents": 2}))),
            &reply(json!({"dependents": 2})),
        );
        assert_eq!(score.metrics.get("restraint"), Some(&None));
    }

    #[test]
    fn reply_error_scores_zero_and_every_field_invalid() {
        let scorer = FieldsScorer::new(tax_schema());
        let r = Reply {
            error: Some("not JSON: expected value at line 1".into()),
            raw: Some("Sure! Here is".into()),
            ..Reply::default()
        };
        let score = scorer.score(&case(Some(vague_expected())), &r);
        assert_eq!(score.value, 0.0);
        assert_eq!(metric(&score, "field_accuracy"), Some(0.0));
        assert_eq!(metric(&score, "exact"), Some(0.0));
        assert_eq!(metric(&score, "invalid_rate"), Some(1.0));
        assert_eq!(metric(&score, "hallucinated_rate"), Some(0.0));
        // The vague case expects six fields null; an unusable reply left none null on purpose.
        assert_eq!(score.metrics.get("restraint"), Some(&Some(0.0)));
        assert_eq!(
            score.diagnostics,
            vec![Diagnostic {
                field: "(reply)".into(),
                want: json!("a JSON object with the schema's fields"),
                got: json!("not JSON: expected value at line 1"),
                outcome: Outcome::Invalid,
            }]
        );
    }

    #[test]
    fn a_reply_that_is_not_an_object_is_invalid() {
        let scorer = FieldsScorer::new(tax_schema());
        let score = scorer.score(
            &case(Some(vague_expected())),
            &reply(json!(["self_employed"])),
        );
        assert_eq!(score.value, 0.0);
        assert_eq!(metric(&score, "invalid_rate"), Some(1.0));
        assert_eq!(score.diagnostics[0].field, "(reply)");
    }

    #[test]
    fn a_json_object_in_text_is_read_but_nothing_more_lenient() {
        let scorer = FieldsScorer::new(tax_schema());
        let r = Reply {
            raw: Some(r#" {"self_employed": true, "irs_letter": true} "#.into()),
            ..Reply::default()
        };
        assert_eq!(scorer.score(&case(Some(vague_expected())), &r).value, 1.0);
        let r = reply(json!(r#"{"self_employed": true, "irs_letter": true}"#));
        assert_eq!(scorer.score(&case(Some(vague_expected())), &r).value, 1.0);
        let r = reply(json!("Sure! {\"self_employed\": true}"));
        assert_eq!(scorer.score(&case(Some(vague_expected())), &r).value, 0.0);
    }

    #[test]
    fn metrics_declare_one_primary_and_the_rates_lower_is_better() {
        let metrics = FieldsScorer::new(tax_schema()).metrics();
        let primary: Vec<&str> = metrics
            .iter()
            .filter(|m| m.primary)
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(primary, vec!["field_accuracy"]);
        let lower: Vec<&str> = metrics
            .iter()
            .filter(|m| !m.higher_is_better)
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(lower, vec!["hallucinated_rate", "invalid_rate"]);
    }

    #[test]
    fn verify_names_a_bad_enum_value_and_the_allowed_values() {
        let scorer = FieldsScorer::new(tax_schema());
        let mut expected = vague_expected();
        expected["filing_status"] = json!("maried");
        let problems = scorer.verify(&case(Some(expected)));
        assert_eq!(
            problems,
            vec![
                "filing_status: \"maried\" is not one of single, married_jointly, \
                 married_separately, head_of_household"
                    .to_string()
            ]
        );
    }

    #[test]
    fn verify_catches_missing_unknown_mistyped_and_non_nullable() {
        let mut schema = tax_schema();
        schema.insert(
            "state".into(),
            FieldSpec {
                nullable: false,
                ..spec(FieldType::String)
            },
        );
        let scorer = FieldsScorer::new(schema);
        let mut expected = vague_expected();
        expected["dependents"] = json!("3");
        expected["state"] = Value::Null;
        if let Value::Object(map) = &mut expected {
            map.remove("irs_letter");
            map.insert("self_employd".into(), json!(true));
        }
        let problems = scorer.verify(&case(Some(expected)));
        assert_eq!(
            problems,
            vec![
                "dependents: \"3\" is not an integer".to_string(),
                "`irs_letter` is missing from expected.json; set it to null if the text never \
                 answers it"
                    .to_string(),
                "state: null is not allowed (the schema says nullable: false)".to_string(),
                "`self_employd` in expected.json is not a field of the schema (did you mean \
                 `self_employed`?)"
                    .to_string(),
            ]
        );
    }

    #[test]
    fn verify_a_missing_or_malformed_expected() {
        let scorer = FieldsScorer::new(tax_schema());
        assert_eq!(
            scorer.verify(&case(None)),
            vec!["expected.json is missing".to_string()]
        );
        assert_eq!(
            scorer.verify(&case(Some(json!([1])))),
            vec![
                "expected.json must be a JSON object with one key per schema field, not a list"
                    .to_string()
            ]
        );
        assert!(scorer.verify(&case(Some(vague_expected()))).is_empty());
    }

    #[test]
    fn summary_counts_answered_fields() {
        let scorer = FieldsScorer::new(tax_schema());
        assert_eq!(
            scorer.summary(&case(Some(vague_expected()))),
            "2/8 answered"
        );
        assert_eq!(scorer.summary(&case(None)), "0/8 answered");
    }
}
