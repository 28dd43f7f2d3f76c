//! Times in the result model: a [`Timestamp`] is a `chrono::DateTime<Utc>`, written as
//! RFC 3339 in UTC with whole seconds (`2026-01-01T00:00:00Z`; a fraction only when the time
//! has one) and read from any RFC 3339 form. Snapshots and every history store keep that
//! text, so runs order by it as text and as time alike.

use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};

/// A point in time, in UTC.
pub type Timestamp = DateTime<Utc>;

/// Now, to the whole second: what a run records as its start and finish.
pub fn now() -> Timestamp {
    Utc::now().trunc_subsecs(0)
}

/// `t` as the snapshot and the history write it: `2026-01-01T00:00:00Z`.
pub fn text(t: &Timestamp) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// An RFC 3339 time in any offset, as UTC; `None` when `s` is none.
pub fn parse(s: &str) -> Option<Timestamp> {
    DateTime::parse_from_rfc3339(s.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Serde for a [`Timestamp`] field as its [`text`].
pub(crate) mod as_text {
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    use super::Timestamp;

    pub(crate) fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::text(t))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let s = String::deserialize(d)?;
        super::parse(&s).ok_or_else(|| {
            D::Error::custom(format!(
                "{s:?} is no RFC 3339 time (expected one like 2026-01-01T00:00:00Z)"
            ))
        })
    }
}

/// Serde for an optional [`Timestamp`] field as its [`text`] or null.
pub(crate) mod as_opt_text {
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    use super::Timestamp;

    pub(crate) fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&super::text(t)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Timestamp>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(s) => super::parse(&s).map(Some).ok_or_else(|| {
                D::Error::custom(format!(
                    "{s:?} is no RFC 3339 time (expected one like 2026-01-01T00:00:00Z)"
                ))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_writes_with_whole_seconds_and_reads_from_any_offset() {
        let t = parse("2026-01-01T01:00:00+01:00").expect("a time");
        assert_eq!(text(&t), "2026-01-01T00:00:00Z");
        assert_eq!(parse(&text(&t)), Some(t));
        let f = parse("2026-01-01T00:00:00.250Z").expect("a fraction");
        assert_eq!(text(&f), "2026-01-01T00:00:00.250Z");
        assert!(f > t);
        assert_eq!(parse("yesterday"), None);
        assert_eq!(now().timestamp_subsec_nanos(), 0);
    }
}
