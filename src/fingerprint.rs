//! The one canonical hashing: every fingerprint (a request's, a case's, a suite's) is the
//! full SHA-256 hex of a canonical text, and JSON in it is compact with every object's keys
//! sorted here, explicitly, never by how serde_json happens to order its maps.
//!
//! Case and suite fingerprints were once cut to 16 hex digits (64 bits) of the same hash:
//! [`same`] takes such an old one, stored in a history or a snapshot, for the full one it
//! begins, so a baseline recorded before the change still compares case by case.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// How long the cut fingerprints stored before this hashing are (hex digits).
const LEGACY_LEN: usize = 16;
/// How long a full fingerprint is (hex digits of SHA-256).
const FULL_LEN: usize = 64;

/// The hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The fingerprint of a JSON value: [`sha256_hex`] of its [`write_canonical`] text.
pub fn of_json(value: &Value) -> String {
    let mut text = String::new();
    write_canonical(value, &mut text);
    sha256_hex(text.as_bytes())
}

/// Whether two fingerprints say the same: equal, or one is an old cut fingerprint (16 hex
/// digits) and the other the full one it begins. A cut one never equals another cut one of
/// different text, so nothing else changes.
pub fn same(a: &str, b: &str) -> bool {
    if a.len() == b.len() {
        return a == b;
    }
    let (short, long) = if a.len() < b.len() { (a, b) } else { (b, a) };
    short.len() == LEGACY_LEN && long.len() == FULL_LEN && long.starts_with(short)
}

/// Compact JSON with object keys sorted explicitly, appended to `out`: the canonical form
/// every fingerprint hashes.
pub fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            out.push('{');
            // Sorted here whatever the map's own order; a map already in order (serde_json's
            // BTreeMap is) is written as it is, with no list of its entries made.
            if map.keys().is_sorted() {
                write_entries(map.iter(), out);
            } else {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                write_entries(entries.into_iter(), out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => write_compact(scalar, out),
    }
}

fn write_entries<'a>(entries: impl Iterator<Item = (&'a String, &'a Value)>, out: &mut String) {
    for (i, (key, val)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_compact(key, out);
        out.push(':');
        write_canonical(val, out);
    }
}

/// serde_json's compact text of `value` (what its `to_string` gives), appended to `out`
/// without a string of its own.
fn write_compact<T: serde::Serialize + ?Sized>(value: &T, out: &mut String) {
    /// `out` as the `io::Write` serde_json writes to: it writes whole UTF-8 pieces (a
    /// string's text between escapes, an escape, a number).
    struct Text<'a>(&'a mut String);
    impl std::io::Write for Text<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let text = std::str::from_utf8(buf).map_err(std::io::Error::other)?;
            self.0.push_str(text);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mark = out.len();
    if serde_json::to_writer(Text(out), value).is_err() {
        // Not reached (serde_json writes UTF-8 in whole pieces); the long way if it were.
        out.truncate(mark);
        out.push_str(&serde_json::to_string(value).unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_hashes_whole_and_the_same_whatever_its_key_order() {
        let v = json!({"b": [1, 2.5, "x"], "a": {"d": null, "c": true}, "é": "\"q\"\n"});
        // The full hash whose first 16 digits the old cut fingerprint of this value was
        // (`fb1ce279984886eb`): the canonical text did not change, only the cut.
        assert_eq!(
            of_json(&v),
            "fb1ce279984886ebb7042b2695bce012038e90f1553172f91513daa80d52e3b7"
        );
        let reordered: Value =
            serde_json::from_str(r#"{"é":"\"q\"\n","a":{"c":true,"d":null},"b":[1,2.5,"x"]}"#)
                .unwrap();
        assert_eq!(of_json(&reordered), of_json(&v));
    }

    #[test]
    fn the_canonical_text_is_compact_json_with_keys_sorted() {
        let v = json!({"b": [1, 2.5, -0.0, 1e300, "x\u{1}\\"], "a": {"d": null, "c": true}, "é\n": "\"q\""});
        let mut text = String::new();
        write_canonical(&v, &mut text);
        assert_eq!(text, serde_json::to_string(&v).unwrap());
        assert_eq!(
            text,
            r#"{"a":{"c":true,"d":null},"b":[1,2.5,-0.0,1e+300,"x\u0001\\"],"é\n":"\"q\""}"#
        );
    }

    #[test]
    fn an_old_cut_fingerprint_is_the_same_as_the_full_one_it_begins() {
        let full = of_json(&json!({"input": "x"}));
        assert_eq!(full.len(), 64);
        assert!(same(&full, &full));
        assert!(same(&full[..16], &full));
        assert!(same(&full, &full[..16]));
        let other = of_json(&json!({"input": "y"}));
        assert!(!same(&other[..16], &full));
        assert!(!same(&full[..15], &full), "only the old length counts");
        assert!(!same("fp-a", "fp-b"));
        assert!(same("fp-a", "fp-a"));
    }
}
