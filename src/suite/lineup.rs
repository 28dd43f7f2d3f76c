//! The lineup: provider sections expanded into contenders (model × effort × temperature),
//! admitted or refused by the suite's request types.

use serde::Serialize;

use super::config::{Config, Effort, ModelEntry, OneOrMany, RateLimit, Temperature};
use crate::results::ContenderInfo;

/// Which kind of provider serves a contender.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProviderKind {
    OpenRouter {
        base_url: String,
    },
    OpenAi {
        base_url: String,
    },
    Custom {
        base_url: String,
        api_key_env: Option<String>,
    },
    Fake,
    /// LLMEvalForge's mock: each case answered with its own `mock_response`.
    Mock,
    TypeSafe,
}

pub const OPENROUTER_URL: &str = "https://openrouter.ai/api/v1";
pub const OPENAI_URL: &str = "https://api.openai.com/v1";

impl ProviderKind {
    /// The kind for a config section.
    pub fn for_section(
        name: &str,
        base_url: Option<&str>,
        api_key_env: Option<&str>,
    ) -> ProviderKind {
        let url = |default: &str| {
            base_url
                .unwrap_or(default)
                .trim_end_matches('/')
                .to_string()
        };
        match name {
            "openrouter" => ProviderKind::OpenRouter {
                base_url: url(OPENROUTER_URL),
            },
            "openai" => ProviderKind::OpenAi {
                base_url: url(OPENAI_URL),
            },
            "fake" => ProviderKind::Fake,
            "mock" => ProviderKind::Mock,
            "typesafe" => ProviderKind::TypeSafe,
            _ => ProviderKind::Custom {
                base_url: url(""),
                api_key_env: api_key_env.map(str::to_string),
            },
        }
    }

    /// Where its requests go (no trailing `/`); `None` for the offline providers. A
    /// cassette's fingerprints are of the request relative to it.
    pub fn base_url(&self) -> Option<&str> {
        match self {
            ProviderKind::OpenRouter { base_url }
            | ProviderKind::OpenAi { base_url }
            | ProviderKind::Custom { base_url, .. } => Some(base_url),
            ProviderKind::Fake | ProviderKind::Mock | ProviderKind::TypeSafe => None,
        }
    }

    /// The request type this provider answers.
    pub fn request_type(&self) -> &'static str {
        match self {
            ProviderKind::TypeSafe => "typesafe",
            _ => "prompt",
        }
    }

    /// The environment variable holding the key, if the provider needs one.
    pub fn key_env(&self) -> Option<&str> {
        match self {
            ProviderKind::OpenRouter { .. } => Some("OPENROUTER_API_KEY"),
            ProviderKind::OpenAi { .. } => Some("OPENAI_API_KEY"),
            ProviderKind::Custom { api_key_env, .. } => api_key_env.as_deref(),
            ProviderKind::Fake | ProviderKind::Mock => None,
            ProviderKind::TypeSafe => Some("TYPESAFE_API_KEY"),
        }
    }

    /// Whether its calls go through the cassette layer; the offline providers (`fake`,
    /// `mock`) answer in the process, and `typesafe` cannot send yet: nothing to record.
    pub fn records(&self) -> bool {
        !matches!(
            self,
            ProviderKind::Fake | ProviderKind::Mock | ProviderKind::TypeSafe
        )
    }
}

/// One model with one set of settings: a column of the experiment matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contender {
    pub info: ContenderInfo,
    pub kind: ProviderKind,
    pub temperature: Option<f64>,
    /// Rate limits that apply, outermost first, each with a key naming where it was set.
    pub rate_limits: Vec<(String, RateLimit)>,
}

impl Contender {
    pub fn id(&self) -> &str {
        &self.info.id
    }

    /// Settings as one filesystem-safe token: `effort-low.temp-0.1.max-8192` (the
    /// cassette layout's settings folder, [`crate::cassette::settings_slug`]).
    pub fn settings_slug(&self) -> String {
        crate::cassette::settings_slug(
            self.info.effort.as_deref(),
            self.info.temperature.as_deref(),
            self.info.max_tokens,
        )
    }
}

/// A contender the suite cannot ask, with the reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refusal {
    pub id: String,
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} refused: {}", self.id, self.reason)
    }
}

/// Settings from the command line; each beats the entries and the defaults.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `-m`: only these contender ids (a model outside the lineup is added).
    pub models: Vec<String>,
    /// `-e`: efforts (`default` sends none).
    pub efforts: Vec<Option<String>>,
    /// `-t`: temperatures.
    pub temperatures: Vec<Option<f64>>,
    pub max_tokens: Option<u32>,
}

#[derive(Debug, Clone, Default)]
pub struct Lineup {
    pub contenders: Vec<Contender>,
    pub refused: Vec<Refusal>,
    /// Entries naming a model their provider does not have (`fake`, `mock` and `typesafe`
    /// know their models), each with the ones it has: a config or usage error, never run.
    pub unknown: Vec<String>,
}

/// One lineup entry before its settings multiply.
struct Entry {
    section: String,
    kind: ProviderKind,
    id: String,
    model: String,
    spec: ModelEntry,
    rate_limits: Vec<(String, RateLimit)>,
}

fn effort_values(v: &Option<OneOrMany<Effort>>) -> Option<Vec<Option<String>>> {
    v.as_ref().map(|l| {
        l.0.iter()
            .map(|e| e.0.clone().filter(|s| s != "default" && !s.is_empty()))
            .collect()
    })
}

fn temp_values(v: &Option<OneOrMany<Temperature>>) -> Option<Vec<Option<f64>>> {
    v.as_ref().map(|l| l.0.iter().map(|t| t.0).collect())
}

fn entries(config: &Config) -> Vec<Entry> {
    let mut out = Vec::new();
    for (section, p) in &config.providers {
        let kind =
            ProviderKind::for_section(section, p.base_url.as_deref(), p.api_key_env.as_deref());
        let mut section_limits = Vec::new();
        if let Some(rl) = p.rate_limit {
            section_limits.push((section.clone(), rl));
        }
        if let Some(vendors) = &p.vendors {
            for (vendor, v) in vendors {
                let mut limits = section_limits.clone();
                if let Some(rl) = v.rate_limit {
                    limits.push((format!("{section}.{vendor}"), rl));
                }
                for m in &v.models {
                    let id = format!("{vendor}/{}", m.model);
                    let mut l = limits.clone();
                    if let Some(rl) = m.rate_limit {
                        l.push((format!("{section}.{id}"), rl));
                    }
                    out.push(Entry {
                        section: section.clone(),
                        kind: kind.clone(),
                        model: id.clone(),
                        id,
                        spec: m.clone(),
                        rate_limits: l,
                    });
                }
            }
        }
        for m in p.models.iter().flatten() {
            let id = format!("{section}/{}", m.model);
            let mut l = section_limits.clone();
            if let Some(rl) = m.rate_limit {
                l.push((format!("{section}.{}", m.model), rl));
            }
            out.push(Entry {
                section: section.clone(),
                kind: kind.clone(),
                id,
                model: m.model.clone(),
                spec: m.clone(),
                rate_limits: l,
            });
        }
    }
    out
}

fn bare_entry(config: &Config, id: &str) -> Entry {
    let (prefix, rest) = id.split_once('/').unwrap_or(("", id));
    let direct = config.providers.get_key_value(prefix).filter(|(name, p)| {
        name.as_str() != "openrouter" && (p.models.is_some() || p.base_url.is_some())
    });
    let (section, kind, model) = match direct {
        Some((name, p)) => (
            name.clone(),
            ProviderKind::for_section(name, p.base_url.as_deref(), p.api_key_env.as_deref()),
            rest.to_string(),
        ),
        None if matches!(prefix, "fake" | "mock" | "typesafe") => (
            prefix.to_string(),
            ProviderKind::for_section(prefix, None, None),
            rest.to_string(),
        ),
        None => {
            let p = config.providers.get("openrouter");
            (
                "openrouter".to_string(),
                ProviderKind::for_section(
                    "openrouter",
                    p.and_then(|p| p.base_url.as_deref()),
                    None,
                ),
                id.to_string(),
            )
        }
    };
    let mut rate_limits = Vec::new();
    if let Some(rl) = config.providers.get(&section).and_then(|p| p.rate_limit) {
        rate_limits.push((section.clone(), rl));
    }
    if section == "openrouter"
        && let Some((vendor, _)) = id.split_once('/')
        && let Some(rl) = config
            .providers
            .get("openrouter")
            .and_then(|p| p.vendors.as_ref())
            .and_then(|v| v.get(vendor))
            .and_then(|v| v.rate_limit)
    {
        rate_limits.push((format!("openrouter.{vendor}"), rl));
    }
    Entry {
        section,
        kind,
        id: id.to_string(),
        model,
        spec: ModelEntry {
            model: id.to_string(),
            effort: None,
            temperature: None,
            max_tokens: None,
            rate_limit: None,
        },
        rate_limits,
    }
}

/// Expands the config's provider sections into contenders.
pub fn expand(config: &Config, overrides: &Overrides) -> Lineup {
    let request_types = config.request_types.clone().unwrap_or_default();
    let all = entries(config);
    let chosen: Vec<Entry> = if overrides.models.is_empty() {
        all
    } else {
        let mut picked = Vec::new();
        for m in &overrides.models {
            let mut hits: Vec<Entry> = all
                .iter()
                .filter(|e| &e.id == m)
                .map(|e| Entry {
                    section: e.section.clone(),
                    kind: e.kind.clone(),
                    id: e.id.clone(),
                    model: e.model.clone(),
                    spec: e.spec.clone(),
                    rate_limits: e.rate_limits.clone(),
                })
                .collect();
            if hits.is_empty() {
                hits.push(bare_entry(config, m));
            }
            picked.extend(hits);
        }
        picked
    };

    let default_efforts = effort_values(&config.defaults.effort).unwrap_or_else(|| vec![None]);
    let default_temps = temp_values(&config.defaults.temperature).unwrap_or_else(|| vec![None]);
    let mut lineup = Lineup::default();
    for e in chosen {
        if let Some(why) = crate::provider::unknown_model(&e.kind, &e.section, &e.id, &e.model) {
            if !lineup.unknown.contains(&why) {
                lineup.unknown.push(why);
            }
            continue;
        }
        let rt = e.kind.request_type();
        if !request_types.iter().any(|t| t == rt) {
            let r = Refusal {
                id: e.id.clone(),
                reason: format!(
                    "needs {rt}; this suite produces {}",
                    request_types.join(", ")
                ),
            };
            if !lineup.refused.contains(&r) {
                lineup.refused.push(r);
            }
            continue;
        }
        let efforts = if overrides.efforts.is_empty() {
            effort_values(&e.spec.effort).unwrap_or_else(|| default_efforts.clone())
        } else {
            overrides.efforts.clone()
        };
        let temps = if overrides.temperatures.is_empty() {
            temp_values(&e.spec.temperature).unwrap_or_else(|| default_temps.clone())
        } else {
            overrides.temperatures.clone()
        };
        let max_tokens = overrides
            .max_tokens
            .or(e.spec.max_tokens)
            .or(config.defaults.max_tokens);
        for effort in &efforts {
            for temp in &temps {
                let c = Contender {
                    info: ContenderInfo {
                        id: e.id.clone(),
                        provider: e.section.clone(),
                        model: e.model.clone(),
                        effort: effort.clone(),
                        temperature: temp.map(|t| t.to_string()),
                        max_tokens,
                    },
                    kind: e.kind.clone(),
                    temperature: *temp,
                    rate_limits: e.rate_limits.clone(),
                };
                if !lineup.contenders.iter().any(|x| x.info == c.info) {
                    lineup.contenders.push(c);
                }
            }
        }
    }
    lineup
}

/// A model listed twice shares one rate limit, so only one of its entries may set it.
pub fn check_rate_limits(config: &Config) -> Result<(), String> {
    let mut seen: Vec<String> = Vec::new();
    for e in entries(config) {
        if e.spec.rate_limit.is_some() {
            let key = format!("{}.{}", e.section, e.id);
            if seen.contains(&key) {
                return Err(format!(
                    "{} is listed twice with a rate_limit on both entries; a model shares one limit, so set it on one entry only",
                    e.id
                ));
            }
            seen.push(key);
        }
    }
    Ok(())
}
