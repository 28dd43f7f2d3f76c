//! The record/replay session: a [`Transport`] is made once per run with a [`Mode`]; each
//! case opens a [`Session`] on its cassette, sends its requests through it (concurrently if
//! it likes), and calls [`Session::finish`] to write what was recorded. Providers call
//! `send` and never learn whether the answer came from the network or from a file.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use super::fingerprint::fingerprint_at;
use super::format::{
    Cassette, CassetteContender, FORMAT, Interaction, RecordedRequest, RecordedResponse,
    RecordedUsage, load_if_present,
};
use super::http::{
    Accept, CallError, HttpRequest, HttpResponse, Route, Upstream, Verdict, too_large,
};
use super::matcher::Matcher;
use super::miss::{self, Miss};
use super::mode::Mode;
use super::redact::{REQUEST_HEADERS, RESPONSE_HEADERS, Redactor};
use super::store::{self, CassetteKey, WriteError, Written};

/// The largest response body accepted by default (`cassettes.max_response_bytes`): 8 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 8 * 1024 * 1024;

/// Where cassettes live and what to leave out of them. Start from
/// [`CassetteOptions::default`]; new fields may come (`#[non_exhaustive]`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CassetteOptions {
    /// The cassette folder (`evals/cassettes`).
    pub dir: PathBuf,
    /// Dotted body paths (`user`, `metadata.trace_id`) left out of fingerprints and diffs.
    pub ignore_fields: Vec<String>,
    /// Patterns replaced with `[REDACTED]` in URLs and bodies before a write.
    pub redact: Vec<Regex>,
    /// Query parameters whose values a request's URL keeps as `[REDACTED]`, matched by
    /// name alone, beside the built-in ones (`cassettes.redact_query`).
    pub redact_query: Vec<String>,
    /// Secret values (the API keys the suite uses) scrubbed before a write, and refused if
    /// still present. Values shorter than 8 characters are ignored.
    pub secrets: Vec<String>,
    /// A recorded response body larger than this is an error of its case on replay (the
    /// live client refuses one while reading it, as the live client does while reading it).
    pub max_response_bytes: u64,
    /// Dotted paths of a model's response (`id`, `created`, `system_fingerprint`...) a
    /// re-record may change without rewriting the cassette: the defaults and
    /// `cassettes.volatile_fields` ([`super::volatile::volatile_fields`]).
    pub volatile_fields: Vec<String>,
}

impl Default for CassetteOptions {
    fn default() -> Self {
        CassetteOptions {
            dir: PathBuf::new(),
            ignore_fields: Vec::new(),
            redact: Vec::new(),
            redact_query: Vec::new(),
            secrets: Vec::new(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            volatile_fields: super::volatile::volatile_fields(&[]),
        }
    }
}

impl CassetteOptions {
    /// The redactor of these options: the secrets, the `redact` patterns and the credential
    /// query parameters.
    pub(crate) fn redactor(&self) -> Redactor {
        Redactor::new(&self.secrets, &self.redact).with_query_names(&self.redact_query)
    }
}

/// What a cassette records about its case, and the hint a miss ends with.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionMeta {
    /// `dataset/case id`.
    pub case: String,
    pub contender: CassetteContender,
    /// The last line of a miss, e.g. "run `evals record -c vague` to record it".
    pub hint: String,
    /// How live calls of this session are scheduled (vendor pauses, rate limits).
    pub route: Route,
    /// The provider's `base_url`: requests are fingerprinted relative to it (empty: whole).
    pub base_url: String,
}

/// Opens a [`Session`] per case on its cassette, in one [`Mode`].
pub struct Transport {
    mode: Mode,
    options: Arc<CassetteOptions>,
    redactor: Arc<Redactor>,
    upstream: Arc<dyn Upstream>,
    unwritten: Arc<Mutex<Unwritten>>,
    tally: Arc<Mutex<Tally>>,
}

/// What a run's sessions did at the network and on disk: how many requests went to a model
/// live (each one money, a retry below counted once), and how many cassettes were written
/// new, rewritten because they changed, or found unchanged (and left as they were).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub live_calls: usize,
    pub new: usize,
    pub changed: usize,
    pub unchanged: usize,
}

impl Tally {
    /// The cassettes written (new and changed ones; an unchanged one is not rewritten).
    pub fn written(&self) -> usize {
        self.new + self.changed
    }
}

/// How many unwritten cassettes [`Transport::take_unwritten`] names, at most.
pub const UNWRITTEN_NAMED: usize = 10;

/// The cassettes `auto` could not write (a read-only folder, a full disk), each file once:
/// a recording failure never breaks a run, but it is not silent either.
#[derive(Debug, Default)]
struct Unwritten {
    /// Why each file was not written, in the order they failed.
    files: Vec<(PathBuf, String)>,
    /// How many of them [`Transport::take_unwritten`] has handed out.
    taken: usize,
}

impl Transport {
    pub fn new(mode: Mode, options: CassetteOptions, upstream: Arc<dyn Upstream>) -> Transport {
        let redactor = options.redactor();
        Transport {
            mode,
            options: Arc::new(options),
            redactor: Arc::new(redactor),
            upstream,
            unwritten: Arc::default(),
            tally: Arc::default(),
        }
    }

    /// What the sessions so far did: live calls, cassettes new, changed and unchanged.
    pub fn tally(&self) -> Tally {
        *self.tally.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cassettes `auto` could not write since the last call, each file once, as
    /// "cannot write cassette FILE: why"; the first [`UNWRITTEN_NAMED`] only, so a read-only
    /// folder does not print a line per case ([`Transport::unwritten_count`] has them all).
    /// Their cases were scored all the same.
    pub fn take_unwritten(&self) -> Vec<String> {
        let mut u = self
            .unwritten
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let end = u.files.len().min(UNWRITTEN_NAMED);
        let fresh = u.files[u.taken.min(end)..end]
            .iter()
            .map(|(_, why)| why.clone())
            .collect();
        u.taken = end;
        fresh
    }

    /// How many cassettes `auto` could not write in all.
    pub fn unwritten_count(&self) -> usize {
        self.unwritten
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .files
            .len()
    }

    /// The cassette file of `key` ([`CassetteKey::path_in`] the cassette folder).
    pub fn path(&self, key: &CassetteKey) -> PathBuf {
        key.path_in(&self.options.dir)
    }

    /// Opens the session of one try of a repeated case: the session the last try
    /// finished, or, for the first try, a new one as [`Transport::session`] opens it.
    pub fn session_in(
        &self,
        key: &CassetteKey,
        meta: SessionMeta,
        repeats: &Arc<Repeats>,
    ) -> Result<Session, CallError> {
        let held = repeats
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut session = match held {
            Some(s) => s,
            None => self.session(key, meta)?,
        };
        session.repeats = Some(Arc::clone(repeats));
        Ok(session)
    }

    /// Writes what every try of a repeated case exchanged, as [`Session::finish`] writes
    /// one session's (nothing when no try opened the cassette).
    pub fn finish_repeats(&self, repeats: &Repeats) -> Result<Option<PathBuf>, CallError> {
        let held = repeats
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match held {
            Some(s) => s.finish(),
            None => Ok(None),
        }
    }

    /// Opens the session of one case. In replay and auto, its cassette is loaded now: a
    /// corrupt or future-format file is an error naming the file; an absent one is not
    /// (replay reports it on the first request).
    pub fn session(&self, key: &CassetteKey, meta: SessionMeta) -> Result<Session, CallError> {
        let path = self.path(key);
        let recorded = match self.mode {
            Mode::Replay | Mode::Auto => load_if_present(&path)?,
            Mode::Record | Mode::Live => None,
        };
        let recorded_interactions = recorded.map(|c| c.interactions);
        // Requests are scrubbed before they are fingerprinted: so is the base they count from.
        let base = self.redactor.scrub_str(&meta.base_url);
        let matcher = Matcher::new(
            recorded_interactions.as_deref().unwrap_or_default(),
            &self.options.ignore_fields,
            &base,
        );
        Ok(Session {
            mode: self.mode,
            base,
            key: key.clone(),
            path,
            meta,
            options: Arc::clone(&self.options),
            redactor: Arc::clone(&self.redactor),
            upstream: Arc::clone(&self.upstream),
            unwritten: Arc::clone(&self.unwritten),
            tally: Arc::clone(&self.tally),
            recorded: recorded_interactions,
            state: Mutex::new(State {
                matcher,
                exchanged: Vec::new(),
                fetched_live: false,
                failed: false,
            }),
            repeats: None,
        })
    }
}

/// One case's use of its cassette. `send` may be called concurrently.
pub struct Session {
    mode: Mode,
    /// [`SessionMeta::base_url`], scrubbed as the requests are.
    base: String,
    key: CassetteKey,
    path: PathBuf,
    meta: SessionMeta,
    options: Arc<CassetteOptions>,
    redactor: Arc<Redactor>,
    upstream: Arc<dyn Upstream>,
    unwritten: Arc<Mutex<Unwritten>>,
    tally: Arc<Mutex<Tally>>,
    /// The cassette as loaded; `None` when there was none (or the mode reads none).
    recorded: Option<Vec<Interaction>>,
    state: Mutex<State>,
    /// The tries this session is one of (`--repeat K`): finishing hands the session back
    /// to them instead of writing.
    repeats: Option<Arc<Repeats>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

/// The upstream of [`Session::open_replay`]: replay sends nothing, so this is never called; if
/// it were, the request would fail rather than reach the network.
struct Offline;

impl Upstream for Offline {
    fn send<'a>(
        &'a self,
        req: HttpRequest,
        _route: &'a Route,
        _accept: Accept,
    ) -> super::UpstreamFuture<'a> {
        Box::pin(async move {
            Err(CallError::Transport(format!(
                "{}: a replay-only session sends nothing to the network",
                req.url
            )))
        })
    }
}

/// The tries of one case run `--repeat K` times, sharing one cassette: each try opens the
/// session the last one finished, so replay goes on down the FIFO queues (try 2 gets the
/// second recording of an identical request) and record keeps every try's exchanges;
/// `Transport::finish_repeats` writes them once, when every try is done.
#[derive(Default)]
pub struct Repeats {
    held: Mutex<Option<Session>>,
}

impl Repeats {
    /// No try has run yet.
    pub fn new() -> Arc<Repeats> {
        Arc::default()
    }
}

struct State {
    matcher: Matcher,
    /// What this session exchanged, in order: replayed hits (auto) and live calls.
    exchanged: Vec<Interaction>,
    /// Whether any request went upstream (auto writes only then).
    fetched_live: bool,
    /// Whether a live call failed (a transport error, a non-2xx status, a 2xx the provider
    /// does not accept): the case errors, so its cassette is left as it was.
    failed: bool,
}

impl Session {
    /// A replay-only session on the cassette of `key` in `options.dir`, opened as a replayed
    /// run opens each case's: the file is read and its recordings indexed now (a corrupt or
    /// future-format file is an error naming it; an absent one is not, and its first request
    /// is a miss), and [`Session::send`] answers from the recordings, never from the network.
    /// `base_url` is the provider's `base_url`, which the recorded fingerprints count from
    /// (empty: the whole URL; see [`RecordedRequest::fingerprint`]). For a program that
    /// replays cassettes through HTTP code of its own; the cassette benchmarks
    /// (`benches/cassettes.rs`) open theirs this way.
    pub fn open_replay(
        options: CassetteOptions,
        key: &CassetteKey,
        base_url: &str,
    ) -> Result<Session, CallError> {
        let meta = SessionMeta {
            case: format!("{}/{}", key.dataset, key.case_id),
            contender: CassetteContender {
                id: format!("{}/{}", key.provider, key.model),
                provider: key.provider.clone(),
                model: key.model.clone(),
                effort: None,
                temperature: None,
                max_tokens: None,
            },
            hint: format!("run `evals record -c {}` to record it", key.case_id),
            route: Route::default(),
            base_url: base_url.to_string(),
        };
        Transport::new(Mode::Replay, options, Arc::new(Offline)).session(key, meta)
    }

    /// The cassette file this session reads and writes.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Answers `req` from the cassette or upstream, as the mode says. Replayed responses
    /// carry the recorded latency; recorded ones the latency as written (whole ms). Only a
    /// 2xx that `accept` (the provider's judgement) takes for a success is recorded; any
    /// other response is returned for the caller to turn into the case's error.
    pub async fn send(&self, req: HttpRequest, accept: Accept) -> Result<HttpResponse, CallError> {
        match self.mode {
            Mode::Live => {
                self.count_live_call();
                // Nothing is written, but the results and the history are: scrub them too.
                let mut response = self
                    .upstream
                    .send(req, &self.meta.route, accept)
                    .await
                    .map_err(|e| self.scrub_error(e))?;
                self.scrub_response(&mut response);
                Ok(response)
            }
            Mode::Record => {
                let (recorded, fp) = self.fingerprinted(&req);
                self.fetch(req, recorded, fp, accept, None, None).await
            }
            Mode::Replay => {
                let (recorded, fp) = self.fingerprinted(&req);
                match self.replay(&fp) {
                    Some(response) => response,
                    None => Err(self.miss(&recorded, None).into()),
                }
            }
            Mode::Auto => {
                let (recorded, fp) = self.fingerprinted(&req);
                match self.replay(&fp) {
                    Some(response) => response,
                    None => self.fetch(req, recorded, fp, accept, None, None).await,
                }
            }
        }
    }

    /// Marks the session failed (a call failed above it, at the gateway): like a failed live
    /// call, its case errors and nothing is written.
    pub fn mark_failed(&self) {
        self.lock().failed = true;
    }

    /// The mode this session records or replays in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// A query string (`a=1&api_key=…`) as this session's recordings keep it: every
    /// credential parameter's value `[REDACTED]` (for the case's trajectory).
    pub fn redact_query(&self, query: &str) -> String {
        self.redactor.redact_query(query)
    }

    /// [`Session::send`] for a request to one of an exec adapter's other APIs (`upstream`,
    /// at `base`, its real base URL): fingerprinted by the API's name and the path below
    /// `base`, recorded in the case's cassette beside the model calls (in call order) with
    /// the API's name. Every answer the API gives is its answer, recorded, except a 429 or
    /// a 5xx (a failure, as for a model: never recorded, the case errors).
    pub async fn send_upstream(
        &self,
        upstream: &str,
        base: &str,
        req: HttpRequest,
    ) -> Result<HttpResponse, CallError> {
        self.send_upstream_ignoring(upstream, base, req, &[]).await
    }

    /// [`Session::send_upstream`], its fingerprint also leaving out the body's `ignore`
    /// fields (an MCP server's JSON-RPC `id`, which counts requests, not what they ask).
    pub async fn send_upstream_ignoring(
        &self,
        upstream: &str,
        base: &str,
        req: HttpRequest,
        ignore: &[String],
    ) -> Result<HttpResponse, CallError> {
        self.send_upstream_via(upstream, base, req, ignore, None)
            .await
    }

    /// [`Session::send_upstream_ignoring`], a request that goes live sent by `via` (a
    /// stdio MCP server evals started) rather than the session's HTTP client.
    pub(crate) async fn send_upstream_via(
        &self,
        upstream: &str,
        base: &str,
        req: HttpRequest,
        ignore: &[String],
        via: Option<&dyn super::Upstream>,
    ) -> Result<HttpResponse, CallError> {
        if self.mode == Mode::Live {
            if let Some(via) = via {
                self.count_live_call();
                let mut response = via
                    .send(req, &self.meta.route, super::http::any_2xx)
                    .await
                    .map_err(|e| self.scrub_error(e))?;
                self.scrub_response(&mut response);
                return Ok(response);
            }
            return self.send(req, super::http::any_2xx).await;
        }
        let (recorded, fp) = self.upstream_fingerprinted(upstream, base, &req, ignore);
        let answered = match self.mode {
            Mode::Record | Mode::Live => None,
            Mode::Replay | Mode::Auto => self.replay(&fp),
        };
        match answered {
            Some(response) => response,
            None if self.mode == Mode::Replay => Err(self.miss(&recorded, Some(upstream)).into()),
            None => {
                self.fetch(req, recorded, fp, super::http::any_2xx, Some(upstream), via)
                    .await
            }
        }
    }

    /// The recordings of the other APIs this session never replayed, in cassette order:
    /// requests the program made when it was recorded and no longer makes. Empty outside
    /// replay, and for a try of a repeated case (`--repeat K`: the later tries' recordings
    /// are still to come).
    pub fn unreplayed_upstream(&self) -> Vec<Interaction> {
        if self.mode != Mode::Replay || self.repeats.is_some() {
            return vec![];
        }
        let Some(recorded) = &self.recorded else {
            return vec![];
        };
        let state = self.lock();
        recorded
            .iter()
            .enumerate()
            .filter(|(i, r)| r.upstream.is_some() && !state.matcher.is_used(*i))
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// Writes the cassette when the mode and the session call for it, and returns its path.
    /// Record writes every exchange of the session (nothing if there was none), replacing
    /// the old file; auto writes (hits and new exchanges, in order) only if something was
    /// fetched live; replay and live write nothing. A session in which a live call failed
    /// writes nothing either: its case errors, and the old cassette (a good one, or none)
    /// stays as it was. A secret still present after scrubbing stops the write with an error
    /// naming its kind, in every mode. A file the file system refuses (a read-only folder, a
    /// full disk) is an error in record, whose job is the write; in auto it is noted for the
    /// run's closing warning (how many cassettes went unwritten) and the case goes on to be
    /// scored.
    pub fn finish(mut self) -> Result<Option<PathBuf>, CallError> {
        if let Some(repeats) = self.repeats.take() {
            *repeats.held.lock().unwrap_or_else(PoisonError::into_inner) = Some(self);
            return Ok(None);
        }
        let state = self
            .state
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let write = match self.mode {
            _ if state.failed => false,
            Mode::Record => !state.exchanged.is_empty(),
            Mode::Auto => state.fetched_live,
            Mode::Replay | Mode::Live => false,
        };
        if !write {
            return Ok(None);
        }
        let cassette = Cassette {
            format: FORMAT,
            case: self.meta.case,
            contender: self.meta.contender,
            // Whole seconds: nanoseconds would only add noise to every re-record's diff.
            recorded_at: chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 0),
            evals_version: env!("CARGO_PKG_VERSION").to_string(),
            interactions: state.exchanged,
        };
        match store::write(
            &self.path,
            &cassette,
            &self.redactor,
            &self.options.volatile_fields,
        ) {
            Ok(written) => {
                let mut t = self.tally.lock().unwrap_or_else(PoisonError::into_inner);
                match written {
                    Written::New => t.new += 1,
                    Written::Changed => t.changed += 1,
                    Written::Unchanged => t.unchanged += 1,
                }
                Ok(Some(self.path))
            }
            Err(WriteError::Io(why)) if self.mode == Mode::Auto => {
                let why = why.to_string();
                let mut u = self
                    .unwritten
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if !u.files.iter().any(|(p, _)| *p == self.path) {
                    u.files.push((self.path, why));
                }
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn count_live_call(&self) {
        self.tally
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .live_calls += 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The recording of `fp` next in line, if any; one whose response is over
    /// `max_response_bytes` (recorded before the limit, or under a higher one) is an error.
    fn replay(&self, fp: &str) -> Option<Result<HttpResponse, CallError>> {
        let recorded = self.recorded.as_ref()?;
        let mut state = self.lock();
        let interaction = recorded.get(state.matcher.take(fp, recorded)?)?;
        let size = match &interaction.response.raw {
            Some(raw) => raw.len() as u64,
            None => body_size(&interaction.response.body),
        };
        let limit = self.options.max_response_bytes;
        if size > limit {
            state.failed = true;
            let subject = format!("{}: the recorded response", self.path.display());
            return Some(Err(too_large(&subject, Some(size), limit, limit)));
        }
        if self.mode == Mode::Auto {
            state.exchanged.push(interaction.clone());
        }
        Some(Ok(interaction.to_response()))
    }

    /// The request as it would be written (scrubbed) and its fingerprint: what replay
    /// matches on and what a recording is filed under.
    fn fingerprinted(&self, req: &HttpRequest) -> (RecordedRequest, String) {
        filed(&self.redactor, req, &self.options.ignore_fields, &self.base)
    }

    /// [`Session::fingerprinted`] for a request to the other API `upstream` at `base`.
    fn upstream_fingerprinted(
        &self,
        upstream: &str,
        base: &str,
        req: &HttpRequest,
        ignore: &[String],
    ) -> (RecordedRequest, String) {
        let recorded = RecordedRequest {
            method: req.method.to_ascii_uppercase(),
            url: self.redactor.scrub_request_url(&req.url),
            headers: allowed(&self.redactor, &req.headers, UPSTREAM_REQUEST_HEADERS),
            body: req.body.as_ref().map(|b| self.redactor.scrub_value(b)),
            raw: req.raw.as_ref().map(|r| self.redactor.scrub_str(r)),
        }
        .raw_if_needed();
        let ignore_fields: Vec<String> = self
            .options
            .ignore_fields
            .iter()
            .chain(ignore)
            .cloned()
            .collect();
        let fp = super::fingerprint::upstream_fingerprint(
            &recorded.to_http(),
            &ignore_fields,
            upstream,
            &self.redactor.scrub_str(base),
        );
        (recorded, fp)
    }

    /// Sends `req` upstream; `request` and `fp` are its [`Session::fingerprinted`] form,
    /// kept as the recording if the answer is a success.
    async fn fetch(
        &self,
        req: HttpRequest,
        request: RecordedRequest,
        fp: String,
        accept: Accept,
        upstream: Option<&str>,
        via: Option<&dyn super::Upstream>,
    ) -> Result<HttpResponse, CallError> {
        self.count_live_call();
        let sent = match via {
            Some(via) => via.send(req, &self.meta.route, accept).await,
            None => self.upstream.send(req, &self.meta.route, accept).await,
        };
        let mut response = match sent {
            Ok(r) => r,
            Err(e) => {
                self.lock().failed = true;
                return Err(self.scrub_error(e));
            }
        };
        let latency_ms = u64::try_from(response.latency.as_millis()).unwrap_or(u64::MAX);
        // Report what replay will report, so a recorded run and its replay agree exactly:
        // the latency as written, and the body as scrubbed (a key the server echoes back
        // must not reach the results or the history through the recording run either).
        response.latency = Duration::from_millis(latency_ms);
        let usage = RecordedUsage::from_body(&response.body);
        self.scrub_response(&mut response);
        let failed = match upstream {
            // Another API's 404 or 422 is its answer, which the program handles.
            Some(_) => response.status == 429 || response.status >= 500,
            None => {
                !(200..300).contains(&response.status)
                    || matches!(accept(&response), Verdict::Failure { .. })
            }
        };
        if failed {
            // A failure (an outage, a rate limit, a bad key, a 200 holding garbage or an
            // error object) is not what the model answers: it is never recorded, so it can
            // neither replace a good cassette nor replay.
            self.lock().failed = true;
            return Ok(response);
        }
        let interaction = Interaction {
            fingerprint: fp,
            request,
            response: RecordedResponse {
                status: response.status,
                headers: self.allowed(
                    &response.headers,
                    if upstream.is_some() {
                        UPSTREAM_RESPONSE_HEADERS
                    } else {
                        RESPONSE_HEADERS
                    },
                ),
                body: response.body.clone(),
                raw: response.raw.clone(),
            }
            .raw_if_needed(),
            latency_ms,
            usage: usage.filter(|_| upstream.is_none()),
            upstream: upstream.map(str::to_string),
        };
        let mut state = self.lock();
        state.exchanged.push(interaction);
        state.fetched_live = true;
        Ok(response)
    }

    /// A response's body scrubbed, as JSON and as the text it came as.
    fn scrub_response(&self, response: &mut HttpResponse) {
        self.redactor.scrub_in_place(&mut response.body);
        if let Some(raw) = &mut response.raw {
            *raw = self.redactor.scrub_str(raw);
        }
    }

    /// A transport error names the URL and may quote the server: keep secrets out of it.
    fn scrub_error(&self, e: CallError) -> CallError {
        match e {
            CallError::Transport(m) => CallError::Transport(self.redactor.scrub_str(&m)),
            CallError::NotListening(m) => CallError::NotListening(self.redactor.scrub_str(&m)),
            CallError::TooLarge(m) => CallError::TooLarge(self.redactor.scrub_str(&m)),
            other => other,
        }
    }

    /// The miss of `request`: the nearest recording (in this cassette, or the case's under
    /// other settings when there is none) and how the request differs from it.
    /// `upstream`: the other API the request is for (`None`: the model), whose recordings
    /// alone it is compared with.
    fn miss(&self, request: &RecordedRequest, upstream: Option<&str>) -> Miss {
        let Some(recorded) = self.recorded.as_deref() else {
            return miss::diagnose(
                &self.path,
                &self.key,
                &self.options.dir,
                None,
                request,
                &self.options.ignore_fields,
                &self.meta.hint,
            );
        };
        // Compared with the recordings of the same API only, their indexes kept.
        let (indexes, same): (Vec<usize>, Vec<Interaction>) = recorded
            .iter()
            .enumerate()
            .filter(|(_, i)| i.upstream.as_deref() == upstream)
            .map(|(n, i)| (n, i.clone()))
            .unzip();
        let mut miss = miss::diagnose(
            &self.path,
            &self.key,
            &self.options.dir,
            Some(&same),
            request,
            &self.options.ignore_fields,
            &self.meta.hint,
        );
        if let miss::MissReason::Differs { nearest, .. }
        | miss::MissReason::UsedUp { nearest, .. } = &mut miss.reason
        {
            *nearest = indexes.get(*nearest).copied().unwrap_or(*nearest);
        }
        miss
    }

    fn allowed(
        &self,
        headers: &[(String, String)],
        allow: &[&str],
    ) -> std::collections::BTreeMap<String, String> {
        allowed(&self.redactor, headers, allow)
    }
}

/// The request headers a recording of another API keeps: its body's type and encoding.
const UPSTREAM_REQUEST_HEADERS: &[&str] = &["content-type", "accept", super::http::ENCODING];
/// The response headers a recording of another API keeps.
const UPSTREAM_RESPONSE_HEADERS: &[&str] = &[
    "content-type",
    "retry-after",
    "location",
    // An MCP server's session (streamable HTTP): the client sends it back on every request.
    "mcp-session-id",
    super::http::ENCODING,
];

/// `req` as a cassette holds it (scrubbed, allow-listed headers) and its fingerprint
/// relative to `base` (the provider's `base_url`, scrubbed as the requests are): what replay
/// matches on, what a recording is filed under and what `cassettes status` checks.
pub(crate) fn filed(
    redactor: &Redactor,
    req: &HttpRequest,
    ignore_fields: &[String],
    base: &str,
) -> (RecordedRequest, String) {
    let recorded = RecordedRequest {
        method: req.method.to_ascii_uppercase(),
        url: redactor.scrub_request_url(&req.url),
        headers: allowed(redactor, &req.headers, REQUEST_HEADERS),
        body: req.body.as_ref().map(|b| redactor.scrub_value(b)),
        raw: req.raw.as_ref().map(|r| redactor.scrub_str(r)),
    }
    .raw_if_needed();
    let fp = fingerprint_at(&recorded.to_http(), ignore_fields, base);
    (recorded, fp)
}

fn allowed(
    redactor: &Redactor,
    headers: &[(String, String)],
    allow: &[&str],
) -> std::collections::BTreeMap<String, String> {
    headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .filter(|(k, _)| allow.contains(&k.as_str()))
        .map(|(k, v)| (k, redactor.scrub_str(v)))
        .collect()
}

/// The size of a body as it came over the wire: a text body's bytes, a JSON one's compact
/// serialization (counted, not built).
fn body_size(body: &Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    match body {
        Value::String(text) => text.len() as u64,
        other => {
            let mut count = Count(0);
            let _ = serde_json::to_writer(&mut count, other);
            count.0
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;
    use crate::cassette::format::load;
    use crate::cassette::miss::MissReason;
    use crate::cassette::{LiveClient, UpstreamFuture, any_2xx};

    const KEY: &str = "sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef";
    const CANONICAL: &str = "https://openrouter.example/api/v1";

    fn contender() -> CassetteContender {
        CassetteContender {
            id: "openai/gpt-4o-mini".into(),
            provider: "openrouter".into(),
            model: "openai/gpt-4o-mini".into(),
            effort: None,
            temperature: Some("0.1".into()),
            max_tokens: None,
        }
    }

    fn key(case_id: &str) -> CassetteKey {
        CassetteKey {
            provider: "openrouter".into(),
            model: "openai/gpt-4o-mini".into(),
            settings: "default".into(),
            dataset: "toy".into(),
            case_id: case_id.into(),
        }
    }

    fn meta(case_id: &str) -> SessionMeta {
        SessionMeta {
            case: format!("toy/{case_id}"),
            contender: contender(),
            hint: format!("run `evals record -c {case_id}` to record it"),
            route: Route::default(),
            base_url: String::new(),
        }
    }

    fn options(dir: &std::path::Path) -> CassetteOptions {
        CassetteOptions {
            dir: dir.to_path_buf(),
            ignore_fields: vec!["user".into()],
            redact: vec![],
            redact_query: vec!["session".into()],
            secrets: vec![KEY.into()],
            ..CassetteOptions::default()
        }
    }

    fn chat(system: &str, temperature: f64) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            url: format!("{CANONICAL}/chat/completions"),
            headers: vec![
                ("Authorization".into(), format!("Bearer {KEY}")),
                ("Content-Type".into(), "application/json".into()),
                ("X-Stainless-OS".into(), "Linux".into()),
            ],
            body: Some(json!({
                "model": "openai/gpt-4o-mini",
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": "I moved in March."},
                ],
                "temperature": temperature,
            })),
            raw: None,
        }
    }

    /// Fails every call: proves replay never touches the network.
    struct NoNetwork;

    impl Upstream for NoNetwork {
        fn send<'a>(
            &'a self,
            req: HttpRequest,
            _route: &'a Route,
            _accept: Accept,
        ) -> UpstreamFuture<'a> {
            Box::pin(async move {
                Err(CallError::Transport(format!(
                    "network used for {}",
                    req.url
                )))
            })
        }
    }

    /// Answers `{"n": <call number>, "echo": <body.prompt>}` plus whatever `extra` holds.
    struct Counter {
        calls: AtomicUsize,
        extra: Value,
    }

    impl Counter {
        fn new(extra: Value) -> Arc<Counter> {
            Arc::new(Counter {
                calls: AtomicUsize::new(0),
                extra,
            })
        }
    }

    impl Upstream for Counter {
        fn send<'a>(
            &'a self,
            req: HttpRequest,
            _route: &'a Route,
            _accept: Accept,
        ) -> UpstreamFuture<'a> {
            Box::pin(async move {
                let n = self.calls.fetch_add(1, Ordering::SeqCst);
                let echo = req.body.as_ref().and_then(|b| b.get("prompt")).cloned();
                Ok(HttpResponse {
                    status: 200,
                    headers: vec![("x-secret-header".into(), "nope".into())],
                    body: json!({"n": n, "echo": echo, "extra": self.extra}),
                    latency: Duration::from_millis(10 + n as u64),
                    raw: None,
                })
            })
        }
    }

    fn prompt(p: usize) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            url: "https://x/v1/chat/completions".into(),
            headers: vec![],
            body: Some(json!({"prompt": p})),
            raw: None,
        }
    }

    #[tokio::test]
    async fn record_against_a_server_then_replay_without_it() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/api/v1/chat/completions"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!({
                        "choices": [{"message": {"content": "{\"moved\": true}"}}],
                        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "cost": 0.00042},
                        "debug": format!("key was {KEY}"),
                    }))
                    .insert_header("x-ratelimit-remaining", "99")
                    .set_delay(Duration::from_millis(60)),
            )
            .mount(&server)
            .await;
        let dir = tempfile::tempdir().unwrap();
        let live = LiveClient::new(
            Duration::from_secs(10),
            vec![(CANONICAL.into(), format!("{}/api/v1", server.uri()))],
        )
        .unwrap();
        let recorder = Transport::new(Mode::Record, options(dir.path()), Arc::new(live));
        let session = recorder.session(&key("vague"), meta("vague")).unwrap();
        let recorded = session
            .send(chat("You extract tax facts.", 0.1), any_2xx)
            .await
            .unwrap();
        assert!(recorded.latency >= Duration::from_millis(60));
        assert_eq!(
            recorded.latency.subsec_nanos() % 1_000_000,
            0,
            "whole ms, as replay reports"
        );
        let written = session.finish().unwrap().unwrap();
        assert_eq!(
            written,
            dir.path()
                .join("openrouter/openai__gpt-4o-mini/default/toy/vague.json")
        );
        drop(server);

        let text = std::fs::read_to_string(&written).unwrap();
        assert!(!text.contains(KEY), "the key was written:\n{text}");
        assert!(text.contains("key was [REDACTED]"));
        assert!(!text.to_lowercase().contains("authorization"));
        assert!(!text.to_lowercase().contains("stainless"));
        assert!(!text.contains("x-ratelimit"));
        assert!(text.contains(&format!("\"url\": \"{CANONICAL}/chat/completions\"")));
        let resorted =
            serde_json::to_string_pretty(&serde_json::from_str::<Value>(&text).unwrap()).unwrap();
        assert_eq!(text, format!("{resorted}\n"), "keys are not sorted");
        let cassette = load(&written).unwrap();
        assert_eq!(cassette.format, 1);
        assert_eq!(cassette.case, "toy/vague");
        assert_eq!(cassette.interactions.len(), 1);
        let interaction = &cassette.interactions[0];
        assert_eq!(
            interaction.request.headers,
            std::collections::BTreeMap::from([("content-type".into(), "application/json".into())])
        );
        assert_eq!(
            interaction.usage.as_ref().and_then(|u| u.cost),
            Some(0.00042)
        );
        assert_eq!(interaction.latency_ms as u128, recorded.latency.as_millis());

        let player = Transport::new(Mode::Replay, options(dir.path()), Arc::new(NoNetwork));
        let session = player.session(&key("vague"), meta("vague")).unwrap();
        let replayed = session
            .send(chat("You extract tax facts.", 0.1), any_2xx)
            .await
            .unwrap();
        assert_eq!(replayed.status, 200);
        assert_eq!(replayed.latency, recorded.latency);
        assert_eq!(replayed.body["choices"], recorded.body["choices"]);
        assert_eq!(replayed.body["usage"], recorded.body["usage"]);
        assert_eq!(session.finish().unwrap(), None);
    }

    #[tokio::test]
    async fn replay_miss_shows_the_field_diff_and_the_hint() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Transport::new(Mode::Record, options(dir.path()), Counter::new(Value::Null));
        let session = recorder.session(&key("vague"), meta("vague")).unwrap();
        session
            .send(
                chat("You extract tax facts.\nAnswer in JSON.", 0.1),
                any_2xx,
            )
            .await
            .unwrap();
        session.send(prompt(1), any_2xx).await.unwrap();
        session.finish().unwrap();

        let player = Transport::new(Mode::Replay, options(dir.path()), Arc::new(NoNetwork));
        let session = player.session(&key("vague"), meta("vague")).unwrap();
        let err = session
            .send(
                chat("You extract tax facts. Be brief.\nAnswer in JSON.", 0.7),
                any_2xx,
            )
            .await
            .unwrap_err();
        let CallError::Miss(miss) = err else {
            panic!("not a miss: {err:?}");
        };
        assert!(
            matches!(miss.reason, MissReason::Differs { nearest: 0, .. }),
            "{miss:?}"
        );
        assert_eq!(miss.diff().len(), 5);
        let message = miss.to_string();
        let path = dir
            .path()
            .join("openrouter/openai__gpt-4o-mini/default/toy/vague.json");
        assert_eq!(
            message,
            format!(
                "no recording matches this request ({})\n  \
                 messages[0].content:\n    \
                 -You extract tax facts.\n    \
                 +You extract tax facts. Be brief.\n     \
                 Answer in JSON.\n  \
                 temperature: 0.1 → 0.7\n\
                 run `evals record -c vague` to record it",
                path.display()
            )
        );
    }

    #[tokio::test]
    async fn replay_without_a_cassette_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let player = Transport::new(Mode::Replay, options(dir.path()), Arc::new(NoNetwork));
        let session = player.session(&key("new"), meta("new")).unwrap();
        let err = session.send(prompt(1), any_2xx).await.unwrap_err();
        let path = dir
            .path()
            .join("openrouter/openai__gpt-4o-mini/default/toy/new.json");
        assert!(
            matches!(&err, CallError::Miss(m) if m.reason == MissReason::NoCassette),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "no cassette for this case ({})\nrun `evals record -c new` to record it",
                path.display()
            )
        );
    }

    #[tokio::test]
    async fn concurrent_replay_uses_each_recording_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Transport::new(Mode::Record, options(dir.path()), Counter::new(Value::Null));
        let session = recorder.session(&key("many"), meta("many")).unwrap();
        // 64 requests, pairs sharing a fingerprint (prompt i/2), each with its own response n=i.
        for i in 0..64 {
            let response = session.send(prompt(i / 2), any_2xx).await.unwrap();
            assert_eq!(response.body["n"], i);
        }
        session.finish().unwrap();

        let player = Transport::new(Mode::Replay, options(dir.path()), Arc::new(NoNetwork));
        let session = Arc::new(player.session(&key("many"), meta("many")).unwrap());
        // Interleave: the second of each pair is sent from the far end of the order.
        let mut handles = Vec::new();
        for i in 0..64usize {
            let p = if i % 2 == 0 { i / 2 } else { 31 - i / 2 };
            let session = Arc::clone(&session);
            handles.push(tokio::spawn(async move {
                (p, session.send(prompt(p), any_2xx).await)
            }));
        }
        let mut used = Vec::new();
        for handle in handles {
            let (p, response) = handle.await.unwrap();
            let response = response.unwrap();
            assert_eq!(
                response.body["echo"], p,
                "answered with another request's response"
            );
            let n = response.body["n"].as_u64().unwrap();
            assert_eq!(n / 2, p as u64);
            assert_eq!(response.latency, Duration::from_millis(10 + n));
            used.push(n);
        }
        used.sort_unstable();
        assert_eq!(used, (0..64).collect::<Vec<u64>>());
        let err = session.send(prompt(0), any_2xx).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("sent more often than when recorded"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn repeats_replay_in_recorded_order() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Transport::new(Mode::Record, options(dir.path()), Counter::new(Value::Null));
        let session = recorder.session(&key("repeat"), meta("repeat")).unwrap();
        for _ in 0..3 {
            session.send(prompt(7), any_2xx).await.unwrap();
        }
        session.finish().unwrap();
        let player = Transport::new(Mode::Replay, options(dir.path()), Arc::new(NoNetwork));
        let session = player.session(&key("repeat"), meta("repeat")).unwrap();
        for n in 0..3 {
            assert_eq!(session.send(prompt(7), any_2xx).await.unwrap().body["n"], n);
        }
    }

    #[tokio::test]
    async fn a_secret_left_in_a_response_stops_the_write_without_printing_it() {
        let dir = tempfile::tempdir().unwrap();
        let leaked = format!("sk-or-v1-{}", "a1b2c3d4e5".repeat(4));
        let recorder = Transport::new(
            Mode::Record,
            options(dir.path()),
            Counter::new(json!(format!("here is a key: {leaked}"))),
        );
        let session = recorder.session(&key("leak"), meta("leak")).unwrap();
        session.send(prompt(1), any_2xx).await.unwrap();
        let err = session.finish().unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, CallError::Cassette(_)));
        let path = dir
            .path()
            .join("openrouter/openai__gpt-4o-mini/default/toy/leak.json");
        assert!(
            message.starts_with(&format!(
                "refusing to write {}: it would contain an OpenRouter key (sk-or-v1-…)",
                path.display()
            )),
            "{message}"
        );
        assert!(
            message.ends_with(
                "in a response; the server sent it back in its response (the request was \
                 scrubbed): add a `cassettes.redact` pattern for it"
            ),
            "{message}"
        );
        assert!(!message.contains(&leaked));
        assert!(!message.contains("a1b2c3d4e5"));
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn a_secret_in_a_request_stops_the_write_and_says_to_keep_it_out_of_the_request() {
        let dir = tempfile::tempdir().unwrap();
        // Not a key the suite knows (so not scrubbed), but one the scan recognises.
        let leaked = format!("sk-or-v1-{}", "f0e1d2c3b4".repeat(4));
        let recorder = Transport::new(Mode::Record, options(dir.path()), Counter::new(Value::Null));
        let session = recorder.session(&key("leak"), meta("leak")).unwrap();
        let mut req = prompt(1);
        req.body = Some(json!({"prompt": 1, "messages": [{"content": format!("use {leaked}")}]}));
        session.send(req, any_2xx).await.unwrap();
        let message = session.finish().unwrap_err().to_string();
        assert!(
            message.ends_with(
                "in a request; keep the secret out of the request (a prompt or a case input \
                 holds it), or add a `cassettes.redact` pattern for it"
            ),
            "{message}"
        );
        assert!(!message.contains("f0e1d2c3b4"));
    }

    #[tokio::test]
    async fn a_redact_pattern_keeps_a_secret_out_and_the_write_goes_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let leaked = format!("sk-or-v1-{}", "a1b2c3d4e5".repeat(4));
        let mut opts = options(dir.path());
        opts.redact = vec![Regex::new(r"sk-or-v1-[0-9a-z]+").unwrap()];
        let recorder = Transport::new(Mode::Record, opts, Counter::new(json!(leaked)));
        let session = recorder.session(&key("leak"), meta("leak")).unwrap();
        // The recording run gets the scrubbed body too, as its replay will.
        let response = session.send(prompt(1), any_2xx).await.unwrap();
        assert_eq!(response.body["extra"], "[REDACTED]");
        let path = session.finish().unwrap().unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.contains("\"extra\": \"[REDACTED]\""), "{text}");
    }

    #[tokio::test]
    async fn auto_replays_hits_and_records_only_misses() {
        let dir = tempfile::tempdir().unwrap();
        let upstream = Counter::new(Value::Null);
        let recorder = Transport::new(Mode::Record, options(dir.path()), upstream.clone());
        let session = recorder.session(&key("auto"), meta("auto")).unwrap();
        session.send(prompt(1), any_2xx).await.unwrap();
        session.send(prompt(2), any_2xx).await.unwrap();
        let path = session.finish().unwrap().unwrap();
        let before = std::fs::read_to_string(&path).unwrap();

        // Everything recorded: nothing fetched, nothing written.
        let auto = Transport::new(Mode::Auto, options(dir.path()), upstream.clone());
        let session = auto.session(&key("auto"), meta("auto")).unwrap();
        assert_eq!(session.send(prompt(1), any_2xx).await.unwrap().body["n"], 0);
        assert_eq!(session.finish().unwrap(), None);
        assert_eq!(upstream.calls.load(Ordering::SeqCst), 2);

        // One hit, one miss: the miss goes upstream, the file holds both in order.
        let session = auto.session(&key("auto"), meta("auto")).unwrap();
        assert_eq!(session.send(prompt(2), any_2xx).await.unwrap().body["n"], 1);
        assert_eq!(session.send(prompt(3), any_2xx).await.unwrap().body["n"], 2);
        assert_eq!(session.finish().unwrap(), Some(path.clone()));
        assert_eq!(upstream.calls.load(Ordering::SeqCst), 3);
        let after = load(&path).unwrap();
        let ns: Vec<&Value> = after
            .interactions
            .iter()
            .map(|i| &i.response.body["n"])
            .collect();
        assert_eq!(ns, vec![&json!(1), &json!(2)]);
        assert_ne!(before, std::fs::read_to_string(&path).unwrap());

        // No cassette at all: auto records.
        let session = auto.session(&key("fresh"), meta("fresh")).unwrap();
        session.send(prompt(9), any_2xx).await.unwrap();
        assert!(session.finish().unwrap().is_some());
    }

    #[tokio::test]
    async fn a_credential_query_parameter_is_kept_redacted_and_matched_by_its_name_alone() {
        let dir = tempfile::tempdir().unwrap();
        let upstream = Counter::new(Value::Null);
        let get = |query: &str| HttpRequest {
            method: "GET".into(),
            url: format!("https://tools.example/api/find?{query}"),
            headers: vec![],
            body: None,
            raw: None,
        };
        let recorder = Transport::new(Mode::Record, options(dir.path()), upstream.clone());
        let session = recorder.session(&key("tool"), meta("tool")).unwrap();
        let sent = "q=shoes&API_KEY=first-cred-123&sig=abc%2F99&session=s-1&page=2";
        session
            .send_upstream("tools", "https://tools.example/api", get(sent))
            .await
            .unwrap();
        assert_eq!(
            session.redact_query(sent),
            "q=shoes&API_KEY=[REDACTED]&sig=[REDACTED]&session=[REDACTED]&page=2"
        );
        let path = session.finish().unwrap().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains(
                "/api/find?q=shoes&API_KEY=[REDACTED]&sig=[REDACTED]&session=[REDACTED]&page=2\""
            ),
            "{text}"
        );
        assert!(
            !text.contains("first-cred") && !text.contains("abc%2F99"),
            "{text}"
        );

        // Other credentials replay the recording; another page does not.
        let player = Transport::new(Mode::Replay, options(dir.path()), Arc::new(NoNetwork));
        let session = player.session(&key("tool"), meta("tool")).unwrap();
        let other = "page=2&q=shoes&API_KEY=on-ci-456&sig=zz&session=s-2";
        let replayed = session
            .send_upstream("tools", "https://tools.example/api", get(other))
            .await
            .unwrap();
        assert_eq!(replayed.body["n"], 0);
        let missed = session
            .send_upstream(
                "tools",
                "https://tools.example/api",
                get("q=shoes&api_key=x1&page=3"),
            )
            .await;
        assert!(matches!(missed, Err(CallError::Miss(_))), "{missed:?}");
    }

    #[tokio::test]
    async fn an_mcp_request_replays_whatever_its_json_rpc_id_and_misses_on_its_params() {
        let dir = tempfile::tempdir().unwrap();
        let upstream = Counter::new(Value::Null);
        let call = |id: u64, order: &str| HttpRequest {
            method: "POST".into(),
            url: "https://mcp.example/mcp".into(),
            headers: vec![],
            body: Some(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "lookup", "arguments": {"order": order}}})),
            raw: None,
        };
        let id = ["id".to_string()];
        let base = "https://mcp.example";
        let recorder = Transport::new(Mode::Record, options(dir.path()), upstream.clone());
        let session = recorder.session(&key("mcp"), meta("mcp")).unwrap();
        session
            .send_upstream_ignoring("orders", base, call(3, "42"), &id)
            .await
            .unwrap();
        session.finish().unwrap().unwrap();
        let player = Transport::new(Mode::Replay, options(dir.path()), Arc::new(NoNetwork));
        let session = player.session(&key("mcp"), meta("mcp")).unwrap();
        let replayed = session
            .send_upstream_ignoring("orders", base, call(17, "42"), &id)
            .await;
        assert!(
            replayed.is_ok(),
            "another id is the same request: {replayed:?}"
        );
        let missed = session
            .send_upstream_ignoring("orders", base, call(18, "43"), &id)
            .await;
        assert!(matches!(missed, Err(CallError::Miss(_))), "{missed:?}");
        // Without `kind: mcp` the id counts.
        let session = player.session(&key("mcp"), meta("mcp")).unwrap();
        let plain = session.send_upstream("orders", base, call(17, "42")).await;
        assert!(matches!(plain, Err(CallError::Miss(_))), "{plain:?}");
    }

    #[tokio::test]
    async fn fingerprints_count_from_the_base_url_and_old_whole_url_ones_still_replay() {
        let dir = tempfile::tempdir().unwrap();
        let upstream = Counter::new(Value::Null);
        let at = |base: &str| SessionMeta {
            base_url: base.into(),
            ..meta("moved")
        };
        let recorder = Transport::new(Mode::Record, options(dir.path()), upstream.clone());
        let session = recorder.session(&key("moved"), at("https://x/v1")).unwrap();
        session.send(prompt(1), any_2xx).await.unwrap();
        session.send(prompt(1), any_2xx).await.unwrap();
        let path = session.finish().unwrap().unwrap();
        let mut cassette = load(&path).unwrap();
        let request = cassette.interactions[0].request.to_http();
        assert_eq!(
            cassette.interactions[0].fingerprint,
            fingerprint_at(&request, &[], "https://x/v1")
        );
        // The same request to the same provider at another address replays.
        let mut moved = prompt(1);
        moved.url = "http://127.0.0.1:9/proxy/v1/chat/completions".into();
        let replay = Transport::new(Mode::Replay, options(dir.path()), Arc::new(NoNetwork));
        let session = replay
            .session(&key("moved"), at("http://127.0.0.1:9/proxy/v1"))
            .unwrap();
        assert_eq!(
            session.send(moved.clone(), any_2xx).await.unwrap().body["n"],
            0
        );
        assert_eq!(
            session.send(moved.clone(), any_2xx).await.unwrap().body["n"],
            1
        );

        // A cassette written when fingerprints held the whole URL replays at its own base,
        // each recording once although it is found under two fingerprints.
        for i in &mut cassette.interactions {
            i.fingerprint = super::super::fingerprint::fingerprint(&i.request.to_http(), &[]);
        }
        std::fs::write(&path, cassette.to_pretty_json().unwrap()).unwrap();
        let session = replay.session(&key("moved"), at("https://x/v1")).unwrap();
        assert_eq!(session.send(prompt(1), any_2xx).await.unwrap().body["n"], 0);
        assert_eq!(session.send(prompt(1), any_2xx).await.unwrap().body["n"], 1);
        assert!(matches!(
            session.send(prompt(1), any_2xx).await,
            Err(CallError::Miss(_))
        ));
        assert_eq!(upstream.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn live_reads_and_writes_nothing_and_failures_are_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let live = Transport::new(Mode::Live, options(dir.path()), Counter::new(Value::Null));
        let session = live.session(&key("live"), meta("live")).unwrap();
        session.send(prompt(1), any_2xx).await.unwrap();
        assert_eq!(session.finish().unwrap(), None);
        assert!(list_files_in(dir.path()).is_empty());

        let recorder = Transport::new(Mode::Record, options(dir.path()), Arc::new(NoNetwork));
        let session = recorder.session(&key("down"), meta("down")).unwrap();
        assert!(matches!(
            session.send(prompt(1), any_2xx).await,
            Err(CallError::Transport(_))
        ));
        assert_eq!(session.finish().unwrap(), None);
        assert!(list_files_in(dir.path()).is_empty());
    }

    /// A provider's judgement for the tests: a body whose `extra` says "bad" is no success.
    fn refuse_bad(r: &HttpResponse) -> Verdict {
        if r.body["extra"] == "bad" {
            Verdict::Failure {
                reason: "provider error: bad".into(),
                transient: false,
            }
        } else {
            Verdict::Success
        }
    }

    #[tokio::test]
    async fn a_2xx_the_provider_refuses_is_returned_but_never_replaces_a_good_cassette() {
        let dir = tempfile::tempdir().unwrap();
        let good = Transport::new(Mode::Record, options(dir.path()), Counter::new(Value::Null));
        let session = good.session(&key("c"), meta("c")).unwrap();
        session.send(prompt(1), refuse_bad).await.unwrap();
        session.send(prompt(2), refuse_bad).await.unwrap();
        let path = session.finish().unwrap().unwrap();
        let before = std::fs::read(&path).unwrap();

        // Record again against a server answering 200 with an error body: the caller gets
        // the response (to make it the case's error), nothing is written.
        let bad = Transport::new(
            Mode::Record,
            options(dir.path()),
            Counter::new(json!("bad")),
        );
        let session = bad.session(&key("c"), meta("c")).unwrap();
        let response = session.send(prompt(1), refuse_bad).await.unwrap();
        assert_eq!(response.body["extra"], "bad");
        assert_eq!(session.finish().unwrap(), None);
        assert_eq!(std::fs::read(&path).unwrap(), before);

        // Auto: a hit, then a miss answered badly: nothing is written either.
        let auto = Transport::new(Mode::Auto, options(dir.path()), Counter::new(json!("bad")));
        let session = auto.session(&key("c"), meta("c")).unwrap();
        session.send(prompt(1), refuse_bad).await.unwrap();
        session.send(prompt(3), refuse_bad).await.unwrap();
        assert_eq!(session.finish().unwrap(), None);
        assert_eq!(std::fs::read(&path).unwrap(), before);

        // And a fresh case answered badly gets no cassette at all.
        let session = bad.session(&key("new"), meta("new")).unwrap();
        session.send(prompt(1), refuse_bad).await.unwrap();
        assert_eq!(session.finish().unwrap(), None);
        assert!(!bad.path(&key("new")).exists());
    }

    /// Answers well, except the request whose prompt is 2: an outage.
    struct DownOnTwo;

    impl Upstream for DownOnTwo {
        fn send<'a>(
            &'a self,
            req: HttpRequest,
            _route: &'a Route,
            _accept: Accept,
        ) -> UpstreamFuture<'a> {
            Box::pin(async move {
                let p = req.body.as_ref().and_then(|b| b.get("prompt")).cloned();
                if p == Some(json!(2)) {
                    return Err(CallError::Transport("HTTP 503 (after 5 attempts)".into()));
                }
                Ok(HttpResponse {
                    status: 200,
                    headers: vec![],
                    body: json!({"echo": p}),
                    latency: Duration::from_millis(5),
                    raw: None,
                })
            })
        }
    }

    #[tokio::test]
    async fn a_case_whose_call_failed_keeps_its_old_cassette_whole() {
        let dir = tempfile::tempdir().unwrap();
        let good = Transport::new(Mode::Record, options(dir.path()), Counter::new(Value::Null));
        let session = good.session(&key("c"), meta("c")).unwrap();
        session.send(prompt(1), any_2xx).await.unwrap();
        session.send(prompt(2), any_2xx).await.unwrap();
        let path = session.finish().unwrap().unwrap();
        let before = std::fs::read(&path).unwrap();
        // The first call works, the second fails: the case errors, and a cassette of the
        // first alone would only make its replay miss the second.
        let flaky = Transport::new(Mode::Record, options(dir.path()), Arc::new(DownOnTwo));
        let session = flaky.session(&key("c"), meta("c")).unwrap();
        session.send(prompt(1), any_2xx).await.unwrap();
        assert!(session.send(prompt(2), any_2xx).await.is_err());
        assert_eq!(session.finish().unwrap(), None);
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    /// A cassette folder no write can reach, not even root's: procfs takes no new folders.
    #[cfg(target_os = "linux")]
    const UNWRITABLE: &str = "/proc/evals-test-no-such-folder/cassettes";

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn auto_notes_a_cassette_it_cannot_write_once_and_goes_on_record_errors() {
        let dir = std::path::Path::new(UNWRITABLE);
        let auto = Transport::new(Mode::Auto, options(dir), Counter::new(Value::Null));
        let path = auto.path(&key("c"));
        for _ in 0..2 {
            // The same file twice: noted once.
            let session = auto.session(&key("c"), meta("c")).unwrap();
            session.send(prompt(1), any_2xx).await.unwrap();
            assert_eq!(session.finish().unwrap(), None);
        }
        let notes = auto.take_unwritten();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with(&format!("cannot write cassette {}: ", path.display())),
            "{}",
            notes[0]
        );
        assert!(auto.take_unwritten().is_empty(), "handed out once");
        assert_eq!(auto.unwritten_count(), 1);

        // Record's job is the write: the same failure is the case's error.
        let record = Transport::new(Mode::Record, options(dir), Counter::new(Value::Null));
        let session = record.session(&key("c"), meta("c")).unwrap();
        session.send(prompt(1), any_2xx).await.unwrap();
        let err = session.finish().unwrap_err();
        assert!(matches!(err, CallError::Cassette(_)));
        assert!(
            err.to_string()
                .starts_with(&format!("cannot write cassette {}: ", path.display())),
            "{err}"
        );
        assert_eq!(record.unwritten_count(), 0);
    }

    #[tokio::test]
    async fn a_secret_refused_at_write_is_an_error_in_auto_too() {
        let dir = tempfile::tempdir().unwrap();
        let leaked = format!("sk-or-v1-{}", "a1b2c3d4e5".repeat(4));
        let auto = Transport::new(Mode::Auto, options(dir.path()), Counter::new(json!(leaked)));
        let session = auto.session(&key("leak"), meta("leak")).unwrap();
        session.send(prompt(1), any_2xx).await.unwrap();
        let err = session.finish().unwrap_err();
        assert!(err.to_string().starts_with("refusing to write "), "{err}");
        assert_eq!(
            auto.unwritten_count(),
            0,
            "a secret is never a mere warning"
        );
    }

    fn list_files_in(dir: &std::path::Path) -> Vec<PathBuf> {
        crate::cassette::store::list_files(dir)
    }

    #[test]
    fn corrupt_and_future_cassettes_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let transport = Transport::new(Mode::Replay, options(dir.path()), Arc::new(NoNetwork));
        let path = transport.path(&key("bad"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{\n  \"format\": 1,\n    ]\n").unwrap();
        let err = transport.session(&key("bad"), meta("bad")).err().unwrap();
        assert!(
            err.to_string()
                .starts_with(&format!("{}: not a cassette (", path.display())),
            "{err}"
        );
        std::fs::write(&path, "{\"format\": 7, \"interactions\": []}").unwrap();
        let err = transport.session(&key("bad"), meta("bad")).err().unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: format 7 is newer than this evals understands (4); upgrade evals",
                path.display()
            )
        );
        // Record mode does not read the old file: it replaces it.
        let recorder = Transport::new(Mode::Record, options(dir.path()), Arc::new(NoNetwork));
        assert!(recorder.session(&key("bad"), meta("bad")).is_ok());
    }

    #[test]
    fn a_case_id_with_dot_dots_stays_inside_the_cassette_folder() {
        let dir = tempfile::tempdir().unwrap();
        let transport = Transport::new(Mode::Replay, options(dir.path()), Arc::new(NoNetwork));
        let path = transport.path(&key("../../etc"));
        assert!(path.starts_with(dir.path()));
        assert!(
            !path
                .components()
                .any(|c| c == std::path::Component::ParentDir)
        );
    }

    #[tokio::test]
    async fn replaying_a_response_over_the_limit_is_an_error_naming_the_cassette() {
        let dir = tempfile::tempdir().unwrap();
        let big = json!("z".repeat(5000));
        let recorder = Transport::new(Mode::Record, options(dir.path()), Counter::new(big));
        let session = recorder.session(&key("big"), meta("big")).unwrap();
        session.send(prompt(1), any_2xx).await.unwrap();
        let path = session.finish().unwrap().unwrap();

        let mut small = options(dir.path());
        small.max_response_bytes = 4096;
        for mode in [Mode::Replay, Mode::Auto] {
            let player = Transport::new(mode, small.clone(), Arc::new(NoNetwork));
            let session = player.session(&key("big"), meta("big")).unwrap();
            let err = session.send(prompt(1), any_2xx).await.unwrap_err();
            let CallError::TooLarge(message) = err else {
                panic!("{mode}: {err:?}");
            };
            assert!(
                message.starts_with(&format!(
                    "{}: the recorded response is 4.9 KiB, over cassettes.max_response_bytes (4.0 KiB)",
                    path.display()
                )),
                "{message}"
            );
            assert_eq!(session.finish().unwrap(), None);
        }
        // Under the default limit it replays.
        let player = Transport::new(Mode::Replay, options(dir.path()), Arc::new(NoNetwork));
        let session = player.session(&key("big"), meta("big")).unwrap();
        assert!(session.send(prompt(1), any_2xx).await.is_ok());
    }
}
