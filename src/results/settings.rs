//! What a run was made with: the lineup, the cases, the flags that narrowed them and the
//! floors it is gated by. Kept with the run, so a baseline can be told apart from a run
//! that selected something else, and a report of the stored run gates it the same way.

use serde::{Deserialize, Serialize};

use super::model::ContenderInfo;
use crate::cassette::Mode;

/// The run's effective settings, as the runner was given them.
///
/// On disk (the snapshot's `run.settings`) it is the JSON object the runner always wrote,
/// keys sorted; every key may be absent in an old file. The history's `settings` column
/// holds the same object without `cases` ([`Settings::without_cases_json`]; runs stored
/// before it hold them too).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Every contender planned (refused ones excluded).
    pub contenders: Vec<ContenderInfo>,
    /// Every case planned, as `dataset/case`.
    pub cases: CaseKeys,
    /// Cases in flight per experiment.
    pub parallelism: usize,
    /// Experiments at a time; `None` means all.
    pub concurrency: Option<usize>,
    /// The cassette mode the run acted in. `None` in a file that did not say.
    #[serde(with = "mode_text_opt")]
    pub cassettes: Option<Mode>,
    /// What the flags narrowed or changed; `None` in runs stored before it was recorded
    /// (they selected everything).
    pub selection: Option<Selection>,
    /// The floors the run was gated by; `None` when it had none.
    pub limits: Option<Limits>,
}

impl Settings {
    /// The selection in settings stored as JSON text (the history's `settings` column),
    /// read alone; `None` when it is absent, null or unreadable (such a run selected
    /// everything).
    pub fn selection_in(json: &str) -> Option<Selection> {
        #[derive(Deserialize)]
        struct Only {
            #[serde(default)]
            selection: Option<Selection>,
        }
        serde_json::from_str::<Only>(json).ok()?.selection
    }

    /// The settings as JSON without the planned cases' keys: the history's `settings`
    /// column, which is read for the selection and must not grow with the suite (the keys
    /// are in the run's snapshot and each ran case in its own row). Otherwise the same
    /// object as the settings' JSON, keys sorted.
    pub fn without_cases_json(&self) -> serde_json::Result<String> {
        serde_json::to_string(&self.fields()?)
    }

    /// Every key but `cases`, as the JSON object they are written as (through a `Value`,
    /// whose maps sort their keys: the contenders' and the selection's too).
    fn fields(&self) -> serde_json::Result<serde_json::Map<String, serde_json::Value>> {
        #[derive(Serialize)]
        struct Written<'a> {
            contenders: &'a [ContenderInfo],
            parallelism: usize,
            concurrency: Option<usize>,
            #[serde(with = "mode_text_opt")]
            cassettes: &'a Option<Mode>,
            selection: &'a Option<Selection>,
            #[serde(skip_serializing_if = "Option::is_none")]
            limits: &'a Option<Limits>,
        }
        let v = serde_json::to_value(Written {
            contenders: &self.contenders,
            parallelism: self.parallelism,
            concurrency: self.concurrency,
            cassettes: &self.cassettes,
            selection: &self.selection,
            limits: &self.limits,
        })?;
        match v {
            serde_json::Value::Object(fields) => Ok(fields),
            _ => Err(serde::ser::Error::custom("settings are an object")),
        }
    }
}

impl Serialize for Settings {
    // Written as the JSON object it always was: through a `Value`, whose maps sort their
    // keys (the contenders' and the selection's too), so the bytes stay the same. The case
    // keys go in at their place in that order, straight from the run's cases: as a `Value`
    // they would be a second copy of every key (100,000 strings for as many cases).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let fields = self.fields().map_err(serde::ser::Error::custom)?;
        let mut map = s.serialize_map(Some(fields.len() + 1))?;
        let mut cases = Some(&self.cases);
        for (k, v) in &fields {
            if k.as_str() > "cases"
                && let Some(c) = cases.take()
            {
                map.serialize_entry("cases", c)?;
            }
            map.serialize_entry(k, v)?;
        }
        if let Some(c) = cases {
            map.serialize_entry("cases", c)?;
        }
        map.end()
    }
}

/// Every case a run planned, as `dataset/case`: the list read back from a stored run, or,
/// for a run being made, each key named from the run's cases when it is read
/// ([`CaseKeys::named`]), so a run of 100,000 cases does not hold 100,000 keys. Written as
/// the JSON array of the keys.
#[derive(Clone, Default)]
pub struct CaseKeys(Keys);

/// The keys of a run being made, in order, each time they are read.
type KeysOf = std::sync::Arc<dyn Fn() -> Box<dyn Iterator<Item = String> + Send> + Send + Sync>;

#[derive(Clone)]
enum Keys {
    Listed(Vec<String>),
    Named { len: usize, keys: KeysOf },
}

impl Default for Keys {
    fn default() -> Keys {
        Keys::Listed(Vec::new())
    }
}

impl CaseKeys {
    /// `len` keys, the `i`-th being `name(i)`.
    pub fn named(len: usize, name: impl Fn(usize) -> String + Send + Sync + 'static) -> CaseKeys {
        let name = std::sync::Arc::new(name);
        CaseKeys::streamed(len, move || {
            let name = name.clone();
            (0..len).map(move |i| name(i))
        })
    }

    /// `len` keys, in the order `keys()` gives them each time they are read (a suite's
    /// [`Cases::keys`](crate::suite::Cases::keys), which reads its index a chunk at a time).
    pub fn streamed<I>(len: usize, keys: impl Fn() -> I + Send + Sync + 'static) -> CaseKeys
    where
        I: Iterator<Item = String> + Send + 'static,
    {
        CaseKeys(Keys::Named {
            len,
            keys: std::sync::Arc::new(move || Box::new(keys().take(len))),
        })
    }

    /// How many cases.
    pub fn len(&self) -> usize {
        match &self.0 {
            Keys::Listed(l) => l.len(),
            Keys::Named { len, .. } => *len,
        }
    }

    /// Whether no case was planned (or the file did not say).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys, in order.
    pub fn iter(&self) -> impl Iterator<Item = std::borrow::Cow<'_, str>> + '_ {
        use std::borrow::Cow;
        let keys: Box<dyn Iterator<Item = Cow<'_, str>>> = match &self.0 {
            Keys::Listed(l) => Box::new(l.iter().map(|k| Cow::Borrowed(k.as_str()))),
            Keys::Named { keys, .. } => Box::new(keys().map(Cow::Owned)),
        };
        keys
    }
}

impl From<Vec<String>> for CaseKeys {
    fn from(keys: Vec<String>) -> CaseKeys {
        CaseKeys(Keys::Listed(keys))
    }
}

impl PartialEq for CaseKeys {
    fn eq(&self, other: &CaseKeys) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for CaseKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for CaseKeys {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for CaseKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CaseKeys, D::Error> {
        Vec::<String>::deserialize(d).map(CaseKeys::from)
    }
}

/// What the command line narrowed or changed; stored in the run's settings, where a
/// baseline must have selected the same (`gate::baseline`). Empty for a library run of
/// the whole suite, as for `evals run` with no flags.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Selection {
    /// `-m`
    pub models: Vec<String>,
    /// `-d`
    pub datasets: Vec<String>,
    /// `-c`
    pub cases: Vec<String>,
    /// `-e`
    pub efforts: Vec<String>,
    /// `-t`
    pub temperatures: Vec<String>,
    /// `--max-tokens`
    pub max_tokens: Option<u32>,
    /// `--tag`; left out when empty, so runs made before tags existed select the same.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// `--shard K/N`: this run is one slice of the selection; left out when unsharded, so
    /// unsharded runs (and a merge of the shards) select what they always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::Shard>,
}

impl Selection {
    /// Whether it narrows nothing (every list empty, no `--max-tokens`).
    pub fn is_everything(&self) -> bool {
        self.models.is_empty()
            && self.datasets.is_empty()
            && self.cases.is_empty()
            && self.efforts.is_empty()
            && self.temperatures.is_empty()
            && self.max_tokens.is_none()
            && self.tags.is_empty()
            && self.shard.is_none()
    }
}

/// A run's floors, each a fraction in 0..=1: LLMEvalForge's `--min-score` (an
/// experiment's mean primary score) and `--min-pass-rate` (the share of its cases that
/// pass). The gate applies them (`gate::limits`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Each experiment's mean primary score must be at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_score: Option<f64>,
    /// Each experiment's share of passing cases must be at least this; it replaces "every
    /// case passes" (which is `1.0`), so a failing case no longer fails the run on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_pass_rate: Option<f64>,
}

/// The cassette mode as its name (`replay`), the way runs have always stored it.
pub(crate) mod mode_text {
    use crate::cassette::Mode;

    pub fn serialize<S: serde::Serializer>(m: &Mode, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(m)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
        let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
        s.parse::<Mode>().map_err(|_| {
            serde::de::Error::custom(format!(
                "unknown cassette mode `{s}`: expected replay, record, auto or live"
            ))
        })
    }
}

/// [`mode_text`] for a mode that may be absent (`null`).
mod mode_text_opt {
    use crate::cassette::Mode;

    pub fn serialize<S: serde::Serializer>(m: &Option<Mode>, s: S) -> Result<S::Ok, S::Error> {
        match m {
            Some(m) => s.collect_str(m),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Mode>, D::Error> {
        let s = <Option<std::borrow::Cow<'de, str>> as serde::Deserialize>::deserialize(d)?;
        s.map(|s| {
            s.parse::<Mode>().map_err(|_| {
                serde::de::Error::custom(format!(
                    "unknown cassette mode `{s}`: expected replay, record, auto or live"
                ))
            })
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The object `runner::evaluate` wrote before settings were typed (`json!` sorts keys).
    const WRITTEN_BEFORE: &str = r#"{"cases":["d/a","d/b"],"cassettes":"replay","concurrency":2,"contenders":[{"effort":null,"id":"fake/echo","max_tokens":null,"model":"echo","provider":"fake","temperature":"0"}],"limits":{"min_score":0.5},"parallelism":4,"selection":{"cases":[],"datasets":["d"],"efforts":[],"max_tokens":null,"models":[],"temperatures":[]}}"#;

    #[test]
    fn settings_written_before_they_were_typed_read_and_write_back_byte_for_byte() {
        let s: Settings = serde_json::from_str(WRITTEN_BEFORE).expect("reads");
        assert_eq!(s.parallelism, 4);
        assert_eq!(s.cassettes, Some(Mode::Replay));
        assert_eq!(
            s.selection.as_ref().unwrap().datasets,
            vec!["d".to_string()]
        );
        assert_eq!(s.limits.unwrap().min_score, Some(0.5));
        assert_eq!(serde_json::to_string(&s).unwrap(), WRITTEN_BEFORE);
    }

    #[test]
    fn named_case_keys_write_and_compare_as_the_list_they_name() {
        let mut s: Settings = serde_json::from_str(WRITTEN_BEFORE).expect("reads");
        let listed = s.clone();
        s.cases = CaseKeys::named(2, |i| format!("d/{}", ["a", "b"][i]));
        assert_eq!(s, listed);
        assert_eq!(serde_json::to_string(&s).unwrap(), WRITTEN_BEFORE);
        assert_eq!(
            serde_json::to_string_pretty(&s).unwrap(),
            serde_json::to_string_pretty(
                &serde_json::from_str::<serde_json::Value>(WRITTEN_BEFORE).unwrap()
            )
            .unwrap()
        );
        assert_eq!(format!("{:?}", s.cases), r#"["d/a", "d/b"]"#);
        s.cases = CaseKeys::default();
        assert!(
            serde_json::to_string(&s)
                .unwrap()
                .starts_with(r#"{"cases":[],"cassettes""#)
        );
    }

    #[test]
    fn settings_of_a_run_stored_before_selections_or_of_a_fixture_read_as_defaults() {
        let s: Settings = serde_json::from_str("{}").expect("reads");
        assert_eq!(s, Settings::default());
        let s: Settings = serde_json::from_str(r#"{"selection": null}"#).expect("reads");
        assert!(s.selection.is_none());
    }
}
