use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Case;
use super::cases::{self, CaseSet};
use super::config::{AdapterConfig, Config, REQUEST_TYPES, SchemaSource, ScorerConfig};
use super::discovery::{self, Locate};
use super::schema::Schema;
use crate::env::{EnvVars, Environment};
use crate::error::{Error, Result};

/// A loaded, validated suite: its config, where it lives, its cases.
#[derive(Debug, Clone)]
pub struct Suite {
    /// `suite:`, else the project folder's name: what runs are stored under.
    pub name: String,
    /// The config file, absolute.
    pub config_path: PathBuf,
    /// The config file as messages show it (relative to the working directory).
    pub display_path: String,
    /// The folder holding the config (`evals/`); relative paths in the config start here.
    pub root: PathBuf,
    /// The project folder (the parent of `evals/`); `.evals/` and relative outputs go here.
    pub project_dir: PathBuf,
    /// The working directory the suite was found from (for messages).
    pub cwd: PathBuf,
    /// The config as parsed.
    pub config: Config,
    /// `request_types:`, checked (never empty): a contender whose provider builds another
    /// type is refused.
    pub request_types: Vec<String>,
    /// `adapter:`, else the prompt adapter with `user: "{{ input }}"`.
    pub adapter: AdapterConfig,
    /// Scorer configs with their schemas loaded.
    pub scorers: Vec<ScorerConfig>,
    /// Every case under `datasets/`, with what loading found wrong.
    pub cases: CaseSet,
    /// Variables from `env_files` (never overriding the environment).
    pub env_files: BTreeMap<String, String>,
}

/// Variables that hold API keys whatever the suite says.
pub const KEY_VARS: &[&str] = &[
    EnvVars::OPENROUTER_API_KEY,
    EnvVars::OPENAI_API_KEY,
    EnvVars::TYPESAFE_API_KEY,
    EnvVars::ANTHROPIC_API_KEY,
    EnvVars::GEMINI_API_KEY,
    EnvVars::GOOGLE_API_KEY,
];

impl Suite {
    /// Finds and loads the suite from `cwd`.
    pub fn locate(cwd: &Path, locate: &Locate) -> Result<Suite> {
        Suite::locate_with(cwd, locate, |_, _| {})
    }

    /// Like [`Suite::locate`], calling `found(name, config path)` once the config is read,
    /// before the cases load (so a run names its suite before any case error).
    pub fn locate_with(
        cwd: &Path,
        locate: &Locate,
        found: impl FnOnce(&str, &str),
    ) -> Result<Suite> {
        let path = discovery::discover(cwd, locate)?;
        Suite::load_with(&path, cwd, found)
    }

    /// Loads the suite whose config is `path`.
    pub fn load(path: &Path, cwd: &Path) -> Result<Suite> {
        Suite::load_with(path, cwd, |_, _| {})
    }

    fn load_with(path: &Path, cwd: &Path, found: impl FnOnce(&str, &str)) -> Result<Suite> {
        let config_path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            cwd.join(path)
        };
        let display_path = discovery::display_path(&config_path, cwd);
        let text = crate::fs::read_text(&config_path, &display_path)?;
        Suite::from_text(&text, config_path, display_path, cwd, found)
    }

    /// The suite whose config text is `text`, as if read from `config_path` (shown as
    /// `display_path`): its cases under `datasets/` beside it. [`Suite::load`] and
    /// [`super::SuiteBuilder`] both end here, so a suite built in Rust is checked as a file's.
    pub(crate) fn from_text(
        text: &str,
        config_path: PathBuf,
        display_path: String,
        cwd: &Path,
        found: impl FnOnce(&str, &str),
    ) -> Result<Suite> {
        let config = Config::parse(text, Path::new(&display_path))?;
        let root = config_path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let project_dir = discovery::project_dir(&config_path);
        let name = config.suite.clone().unwrap_or_else(|| {
            project_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "suite".to_string())
        });

        let request_types = match &config.request_types {
            None => {
                return Err(Error::Config(format!(
                    "{display_path}: missing key 'request_types': add `request_types: [prompt]` (what the suite's adapter sends; one of {})",
                    REQUEST_TYPES.join(", ")
                )));
            }
            Some(list) if list.is_empty() => {
                return Err(Error::Config(format!(
                    "{display_path}: 'request_types' is empty: list what the suite's adapter sends, e.g. `request_types: [prompt]`"
                )));
            }
            Some(list) => {
                for t in list {
                    if !REQUEST_TYPES.contains(&t.as_str()) {
                        let hint = crate::suggest::did_you_mean(t, REQUEST_TYPES)
                            .map(|s| format!("did you mean '{s}'?"))
                            .unwrap_or_else(|| {
                                format!("known types: {}", REQUEST_TYPES.join(", "))
                            });
                        return Err(Error::Config(format!(
                            "{display_path}: unknown request type '{t}' in request_types ({hint})"
                        )));
                    }
                }
                list.clone()
            }
        };

        let adapter = config.adapter.clone().unwrap_or(AdapterConfig::Prompt {
            system: None,
            user: Some("{{ input }}".to_string()),
            json: false,
            tools: None,
            tool_choice: None,
        });
        let scorers = match &config.scorer {
            None => {
                return Err(Error::Config(format!(
                    "{display_path}: missing key 'scorer': add e.g. `scorer: {{ kind: fields, schema: {{ ... }} }}` or `scorer: {{ kind: assertions }}`"
                )));
            }
            Some(list) if list.0.is_empty() => {
                return Err(Error::Config(format!(
                    "{display_path}: 'scorer' is an empty list: name at least one scorer"
                )));
            }
            Some(list) => list
                .0
                .iter()
                .map(|s| resolve_scorer(s, &root, cwd, &display_path))
                .collect::<Result<Vec<_>>>()?,
        };

        if config.defaults.parallelism == Some(0) {
            return Err(Error::Config(format!(
                "{display_path}: defaults.parallelism is 0: give at least 1 case in flight per experiment"
            )));
        }
        if config.defaults.repeat == Some(0) {
            return Err(Error::Config(format!(
                "{display_path}: defaults.repeat is 0: give the tries per case, at least 1"
            )));
        }
        if let Some(t) = config.defaults.timeout
            && !(t.is_finite() && t > 0.0)
        {
            return Err(Error::Config(format!(
                "{display_path}: defaults.timeout is {t}: give the seconds a call may take, e.g. 120"
            )));
        }
        if config.cassettes.max_response_bytes == Some(0) {
            return Err(Error::Config(format!(
                "{display_path}: cassettes.max_response_bytes is 0: give the largest response \
                 body a call may return, in bytes (default 8388608, 8 MiB)"
            )));
        }
        // A path with an empty or spaced segment names no field: it would quiet nothing.
        if let Some(bad) = config.cassettes.volatile_fields.iter().find(|f| {
            f.split('.')
                .any(|s| s.is_empty() || s.chars().any(char::is_whitespace))
        }) {
            return Err(Error::Config(format!(
                "{display_path}: cassettes.volatile_fields: '{bad}' is not a field's path; \
                 write a response field as a dotted path from the body's root, e.g. \
                 meta.trace_id"
            )));
        }
        if let Some(AdapterConfig::Exec {
            max_request_bytes: Some(0),
            ..
        }) = &config.adapter
        {
            return Err(Error::Config(format!(
                "{display_path}: adapter.max_request_bytes is 0: give the largest request body \
                 a worker may send the gateway, in bytes (default 33554432, 32 MiB)"
            )));
        }
        for p in &config.cassettes.redact {
            if let Err(e) = regex::Regex::new(p) {
                return Err(Error::Config(format!(
                    "{display_path}: cassettes.redact: bad pattern '{p}': {}",
                    e.to_string()
                        .lines()
                        .last()
                        .unwrap_or("invalid regex")
                        .trim()
                )));
            }
        }
        super::lineup::check_rate_limits(&config)
            .map_err(|e| Error::Config(format!("{display_path}: {e}")))?;
        for (name, p) in &config.providers {
            let limits = std::iter::once(p.rate_limit)
                .chain(
                    p.vendors
                        .iter()
                        .flat_map(|v| v.values().map(|v| v.rate_limit)),
                )
                .chain(p.models.iter().flatten().map(|m| m.rate_limit))
                .chain(p.vendors.iter().flat_map(|v| {
                    v.values()
                        .flat_map(|v| v.models.iter().map(|m| m.rate_limit))
                }));
            for rl in limits.flatten() {
                if rl.per_minute == 0 {
                    return Err(Error::Config(format!(
                        "{display_path}: rate_limit under {name} has per_minute: 0; give it at least 1 call a minute"
                    )));
                }
            }
        }
        found(&name, &display_path);
        let env_files = load_env_files(&config.env_files, &root, cwd, &display_path)?;
        // The egress scrubber learns the suite's secrets (and its credential query
        // parameters) before anything can print them.
        crate::secrets::register_query_names(&config.cassettes.redact_query);
        crate::secrets::register(
            env_files
                .iter()
                .filter(|(k, _)| crate::secrets::is_secret_name(k))
                .map(|(_, v)| v.clone()),
        );
        let cases = cases::load_cases(&root, &project_dir, cwd)?;
        let suite = Suite {
            name,
            config_path,
            display_path,
            root,
            project_dir,
            cwd: cwd.to_path_buf(),
            config,
            request_types,
            adapter,
            scorers,
            cases,
            env_files,
        };
        // The suite's keys, and a secret-named value the config hands an exec worker
        // (`adapter.env`): registered together, so the scrubber is rebuilt once.
        let mut secrets = suite.secret_values();
        if let Some(super::config::AdapterConfig::Exec { env, .. }) = &suite.config.adapter {
            secrets.extend(
                env.iter()
                    .filter(|(k, _)| crate::secrets::is_secret_name(k))
                    .map(|(_, v)| v.clone()),
            );
        }
        crate::secrets::register(secrets);
        Ok(suite)
    }

    /// The suite without its cases: what a run needs beside the cases it selected (so a
    /// large suite's cases are not held twice).
    pub fn without_cases(&self) -> Suite {
        Suite {
            name: self.name.clone(),
            config_path: self.config_path.clone(),
            display_path: self.display_path.clone(),
            root: self.root.clone(),
            project_dir: self.project_dir.clone(),
            cwd: self.cwd.clone(),
            config: self.config.clone(),
            request_types: self.request_types.clone(),
            adapter: self.adapter.clone(),
            scorers: self.scorers.clone(),
            cases: CaseSet::default(),
            env_files: self.env_files.clone(),
        }
    }

    /// A variable from `env` (the run's environment: the process's for the CLI, nothing for
    /// [`Environment::default`]), else from the suite's `env_files`: where a run reads its
    /// API keys and the trackers' settings.
    pub fn var(&self, env: &Environment, name: &str) -> Option<String> {
        env.var(name).or_else(|| self.env_file(name))
    }

    /// A variable of the suite's `env_files` alone, when set and not empty.
    pub fn env_file(&self, name: &str) -> Option<String> {
        self.env_files.get(name).cloned().filter(|v| !v.is_empty())
    }

    /// The variable that holds the API key a provider names `var`: `var` itself, or, for
    /// `GEMINI_API_KEY` unset where `GOOGLE_API_KEY` is set (in `env` or `env_files`),
    /// `GOOGLE_API_KEY` (the names Google's SDKs read).
    pub fn key_var<'a>(&self, env: &Environment, var: &'a str) -> &'a str {
        if var == EnvVars::GEMINI_API_KEY
            && self.var(env, var).is_none()
            && self.var(env, EnvVars::GOOGLE_API_KEY).is_some()
        {
            EnvVars::GOOGLE_API_KEY
        } else {
            var
        }
    }

    /// The values of every API key this suite could use: scrubbed from everything written,
    /// and looked for by the secret scan. The process's variables are read here whatever
    /// environment a run is given: a key set there is hidden even when the run never uses
    /// it.
    pub fn secret_values(&self) -> Vec<String> {
        let process = |name: &str| {
            crate::env::process_var_os(name)
                .and_then(|v| v.into_string().ok())
                .filter(|v| !v.is_empty())
        };
        let mut out: Vec<String> = self
            .key_vars()
            .iter()
            .filter_map(|v| process(v).or_else(|| self.env_file(v)))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The environment variables that hold this suite's API keys: the providers' own and
    /// every `api_key_env`.
    pub fn key_vars(&self) -> Vec<String> {
        let mut vars: Vec<String> = KEY_VARS.iter().map(|v| v.to_string()).collect();
        vars.extend(
            self.config
                .providers
                .values()
                .filter_map(|p| p.api_key_env.clone()),
        );
        // An upstream API's credential is a key like a provider's.
        if let Some(super::config::AdapterConfig::Exec { upstreams, .. }) = &self.config.adapter {
            vars.extend(upstreams.key_vars().map(str::to_string));
        }
        vars
    }

    /// Checks the lineup against the providers' catalog: a model its provider does not have
    /// is a config error naming the ones it has (`fake/ech: the fake provider has the
    /// models echo, parrot and oracle; ...`). The CLI checks every suite it loads with the
    /// built-in providers; a run checks its own lineup again with the run's.
    pub fn check_lineup(&self, catalog: &dyn super::lineup::Catalog) -> Result<()> {
        let lineup =
            super::lineup::expand(&self.config, &super::lineup::Overrides::default(), catalog);
        match lineup.unknown.first() {
            Some(why) => Err(Error::Config(format!("{}: {why}", self.display_path))),
            None => Ok(()),
        }
    }

    /// The suite fingerprint: scorer config, schema, thresholds and `version`, hashed from
    /// parsed values with sorted keys (SHA-256 of canonical JSON), so formatting and key
    /// order never change it. `check` gates a run only against a baseline with the same.
    pub fn fingerprint(&self) -> String {
        let v = serde_json::json!({
            "scorers": self.scorers,
            "version": self.config.version,
            "minimum_scores": self.config.minimum_scores,
        });
        crate::fingerprint::of_json(&v)
    }

    /// Suite-wide thresholds merged with the case's (the case wins).
    pub fn thresholds(&self, case: &Case) -> BTreeMap<String, f64> {
        let mut t = self.config.minimum_scores.clone();
        t.extend(case.minimum_scores.iter().map(|(k, v)| (k.clone(), *v)));
        t
    }

    /// Where cassettes live.
    pub fn cassette_dir(&self) -> PathBuf {
        match &self.config.cassettes.dir {
            Some(d) => super::config::resolve_path(&self.root, d),
            None => self.root.join("cassettes"),
        }
    }
}

/// A case's fingerprint: input, expected, assertions, metadata and thresholds, hashed as
/// every fingerprint is (SHA-256 of canonical JSON).
pub fn case_fingerprint(case: &Case, thresholds: &BTreeMap<String, f64>) -> String {
    let mut v = serde_json::json!({
        "input": case.input.to_value(),
        "expected": case.expected,
        "expect": case.expect,
        "metadata": case.metadata,
        "minimum_scores": thresholds,
    });
    // Only where a case has them: every other case keeps the fingerprint it had.
    if let Some(components) = &case.expected_components {
        v["expected_components"] = components.clone();
    }
    crate::fingerprint::of_json(&v)
}

fn resolve_scorer(s: &ScorerConfig, root: &Path, cwd: &Path, config: &str) -> Result<ScorerConfig> {
    match s {
        ScorerConfig::Fields {
            schema: SchemaSource::File(f),
        } => {
            let path = super::config::resolve_path(root, f);
            let shown = discovery::display_path(&path, cwd);
            let text = crate::fs::read_text(&path, &shown)
                .map_err(|e| e.named_by("scorer.schema", Some(config)))?;
            let schema: Schema = if path.extension().is_some_and(|e| e == "json") {
                serde_json::from_str(&text).map_err(|e| {
                    Error::Config(format!("{shown}:{}:{}: {}", e.line(), e.column(), e))
                })?
            } else {
                serde_saphyr::from_str_with_options(&text, super::yaml::options()).map_err(|e| {
                    Error::Config(super::config::yaml_error(&text, Path::new(&shown), &e))
                })?
            };
            Ok(ScorerConfig::Fields {
                schema: SchemaSource::Inline(schema),
            })
        }
        other => Ok(other.clone()),
    }
}

/// Reads `KEY=VALUE` lines (`export`, quotes and `#` comments allowed) from each file, in
/// order, a byte order mark at its start ignored; a missing file is skipped (a `.env` is
/// rarely committed, so CI has none).
fn load_env_files(
    files: &[String],
    root: &Path,
    cwd: &Path,
    shown: &str,
) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for f in files {
        let path = super::config::resolve_path(root, f);
        if !path.exists() {
            continue;
        }
        let text = crate::fs::read_text(&path, &discovery::display_path(&path, cwd))
            .map_err(|e| e.named_by("env_files", Some(shown)))?;
        // A UTF-8 byte order mark (Windows editors write one) is not part of the first key.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((k, v)) = line.split_once('=') else {
                return Err(Error::Config(format!(
                    "{}:{}: expected KEY=VALUE (listed in env_files of {shown})",
                    discovery::display_path(&path, cwd),
                    i + 1
                )));
            };
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|x| x.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
                .unwrap_or(v);
            out.entry(k.trim().to_string())
                .or_insert_with(|| v.to_string());
        }
    }
    Ok(out)
}
