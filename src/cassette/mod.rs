//! Cassettes: every provider HTTP exchange recorded to a file, and replayed from it.
//!
//! The layer sits below the providers, at the HTTP exchange: a provider hands a
//! [`HttpRequest`] to a [`Session`], which answers from the case's cassette or forwards it
//! to the [`Upstream`] and records the exchange, depending on the [`Mode`]. Providers, the
//! exec gateway and judges are therefore recorded the same way, and the runner never knows
//! whether it records or replays.
//!
//! - `fingerprint`: what makes two requests the same.
//! - `format`: the file's types and version, loading with clear errors.
//! - `store`: where each cassette lives, atomic writes.
//! - `matcher`: FIFO replay by fingerprint; the field diff of a miss.
//! - `redact`: scrubbing secrets before a write; the secret scan.
//! - `transport`: modes, sessions, and the live HTTP client.

mod fingerprint;
mod format;
mod http;
pub(crate) mod matcher;
pub(crate) mod redact;
mod store;
mod transport;

pub use fingerprint::{fingerprint, fingerprint_at};
pub use format::{
    Cassette, FORMAT, Interaction, RecordedRequest, RecordedResponse, RecordedUsage, load,
};
pub use http::{
    Accept, CallError, HttpRequest, HttpResponse, Limit, Route, Verdict, any_2xx, human_bytes,
};
pub use redact::{Finding, REDACTED, scan_paths};
pub use store::{CassetteKey, list_files, list_partial_files};
pub use transport::{
    CassetteOptions, DEFAULT_MAX_RESPONSE_BYTES, LiveClient, Mode, Session, SessionMeta, Tally,
    Transport, UNWRITTEN_NAMED, Upstream, UpstreamFuture,
};
