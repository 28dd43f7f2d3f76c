//! Cassettes: every provider HTTP exchange recorded to a file, and replayed from it.
//!
//! The layer sits below the providers, at the HTTP exchange: a provider hands a
//! [`HttpRequest`] to a [`Session`], which answers from the case's cassette or forwards it
//! to the `Upstream` and records the exchange, depending on the [`Mode`]. Providers, the
//! exec gateway and judges are therefore recorded the same way, and the runner never knows
//! whether it records or replays.
//!
//! - `http`: the exchange types, [`CallError`], the `Upstream` trait.
//! - `mode`: the [`Mode`] and the policy that picks it (flag, command default, CI).
//! - `fingerprint`: what makes two requests the same.
//! - `format`: the file's types and version, loading with clear errors.
//! - `store`: where each cassette lives (the one owner of the layout), atomic writes.
//! - `volatile`: the response fields a re-record may change without rewriting the file.
//! - `matcher`: FIFO replay by fingerprint; the field diff of two requests.
//! - `miss`: a replay miss as data ([`Miss`]): the nearest recording and the diff.
//! - `session`: the `Transport` and its per-case [`Session`]s, record and replay.
//! - `live`: the reqwest `LiveClient`, the real `Upstream`.
//! - `status`: what `evals cassettes status` reports, per case and contender.
//! - `redact` (the egress scrubber's, `crate::secrets::redact`): scrubbing secrets before
//!   a write; the secret scan.
//! - `error`: [`CassetteError`].

mod fingerprint;
mod format;
mod http;
mod live;
pub(crate) mod matcher;
pub(crate) mod miss;
pub mod mode;
/// The redaction engine is the egress scrubber's ([`crate::secrets::redact`]): one pattern
/// table for cassettes, scans and everything else that leaves the process.
pub(crate) use crate::secrets::redact;
mod session;
mod sse;
pub mod status;
mod store;
pub mod volatile;

pub use crate::error::{CassetteError, SecretPlace};
pub(crate) use format::{CassetteContender, dig};
pub use format::{Interaction, RecordedRequest, RecordedResponse, RecordedUsage};
pub use http::{
    Accept, CallError, ENCODING, ErrorClass, HttpRequest, HttpResponse, Verdict, any_2xx,
    classify_error, error_words,
};
pub(crate) use http::{Limit, Route, Upstream, UpstreamFuture};
pub(crate) use live::LiveClient;
pub use miss::{Miss, MissReason};
pub use mode::Mode;
pub use redact::{Finding, scan_paths};
pub use session::CassetteOptions;
pub(crate) use session::Repeats;
pub use session::Session;
pub(crate) use session::{
    DEFAULT_MAX_RESPONSE_BYTES, SessionMeta, Tally, Transport, UNWRITTEN_NAMED,
};
pub(crate) use sse::has_data;
pub use store::CassetteKey;
pub(crate) use store::{case_file, list_files as list_json_files, may_share_a_file, settings_slug};
