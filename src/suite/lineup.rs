//! The lineup: provider sections expanded into contenders (model × effort × temperature),
//! admitted or refused by the suite's request types.

use serde::Serialize;

use super::config::{
    Config, Effort, ModelEntry, OneOrMany, ProviderSection, RateLimit, Temperature,
};
use crate::results::ContenderInfo;

/// What the lineup asks of the providers a section's kind names: whether they have a model,
/// what request type they build, whether they answer in the process. The suite knows
/// providers only through this; `crate::provider::Registry` is the catalog runs use.
pub trait Catalog {
    /// Why model `model` of contender `id` (section `section`, provider `kind`) cannot be,
    /// naming the models the provider has; `None` when it has it, serves any model, or no
    /// provider is registered as `kind` (the run refuses that one by itself).
    fn unknown_model(&self, kind: &str, section: &str, id: &str, model: &str) -> Option<String>;
    /// The request type the provider of `kind` builds (`prompt` when none is registered).
    fn request_type(&self, kind: &str) -> &'static str;
    /// Whether a provider registered as `kind` answers in the process (it needs no URL, so
    /// `-m kind/model` names it without a section).
    fn answers_in_process(&self, kind: &str) -> bool;
}

/// Which provider serves a contender, as its config section said: the name of a provider
/// in the [`Catalog`] (`openrouter`, `openai`, `custom` for a `base_url`
/// section, `fake`, `mock`, `typesafe`, or one a Rust caller registered) and the section's
/// `base_url` and `api_key_env`. Plain data: what a provider does with it (its default URL,
/// its key variable, how it builds requests) is the provider's, in `crate::provider`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderKind {
    /// The registered provider's name.
    pub name: String,
    /// `base_url:` as written, without a trailing `/`.
    pub base_url: Option<String>,
    /// `api_key_env:` as written.
    pub api_key_env: Option<String>,
    /// `pause:` as written: what a retry pauses (the provider decides when unset).
    pub pause: Option<super::config::Pause>,
}

/// The registered name of the provider behind a `base_url` section with no `kind:`.
pub const CUSTOM_KIND: &str = "custom";

/// The registered name of the OpenAI Responses API provider: an `openai:` or `base_url`
/// section with `api: responses`.
pub const RESPONSES_KIND: &str = "openai-responses";

impl ProviderKind {
    /// The kind for a config section: its `kind:` when it names one; else a known provider
    /// by its section name (`openrouter:`, `fake:`); else an OpenAI-compatible `base_url`
    /// section (`custom`).
    pub fn for_section(
        name: &str,
        kind: Option<&str>,
        base_url: Option<&str>,
        api_key_env: Option<&str>,
    ) -> ProviderKind {
        let name = match kind {
            Some(k) => k,
            None if super::config::KNOWN_PROVIDERS.contains(&name) => name,
            None => CUSTOM_KIND,
        };
        ProviderKind {
            name: name.to_string(),
            base_url: base_url.map(|u| u.trim_end_matches('/').to_string()),
            api_key_env: api_key_env.map(str::to_string),
            pause: None,
        }
    }
}

/// One model with one set of settings: a column of the experiment matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contender {
    /// What results record of it: id, section, model and settings as written.
    pub info: ContenderInfo,
    /// The provider that serves it, and its section's `base_url` and `api_key_env`.
    pub kind: ProviderKind,
    /// The temperature to send, as a number; `None` sends none.
    pub temperature: Option<f64>,
    /// Rate limits that apply, outermost first, each with a key naming where it was set.
    pub rate_limits: Vec<(String, RateLimit)>,
}

impl Contender {
    /// Its id (`openai/gpt-4o-mini`, `fake/echo`): how results and messages name it.
    pub fn id(&self) -> &str {
        &self.info.id
    }

    /// Settings as one filesystem-safe token: `effort-low.temp-0.1.max-8192` (the
    /// cassette layout's settings folder).
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
    /// The lineup entry's id.
    pub id: String,
    /// Why: `needs typesafe; this suite produces prompt`.
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
    /// `--max-tokens`: the most tokens a reply may have, for every contender.
    pub max_tokens: Option<u32>,
}

/// The contenders a run asks, from the config's provider sections and the [`Overrides`].
#[derive(Debug, Clone, Default)]
pub struct Lineup {
    /// Each model × effort × temperature the suite can ask, in config order.
    pub contenders: Vec<Contender>,
    /// Entries the suite cannot ask (a request type it does not produce): never run.
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

fn section_kind(name: &str, p: &ProviderSection) -> ProviderKind {
    let mut kind = ProviderKind::for_section(
        name,
        p.kind.as_deref(),
        p.base_url.as_deref(),
        p.api_key_env.as_deref(),
    );
    // `api: responses` asks an OpenAI-shaped section's contenders in the Responses API.
    if p.api == Some(super::config::OpenAiApi::Responses)
        && (kind.name == "openai" || kind.name == CUSTOM_KIND)
    {
        kind.name = RESPONSES_KIND.to_string();
    }
    kind.pause = p.pause;
    kind
}

fn entries(config: &Config) -> Vec<Entry> {
    let mut out = Vec::new();
    for (section, p) in &config.providers {
        let kind = section_kind(section, p);
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

fn bare_entry(config: &Config, catalog: &dyn Catalog, id: &str) -> Entry {
    let (prefix, rest) = id.split_once('/').unwrap_or(("", id));
    let direct = config.providers.get_key_value(prefix).filter(|(name, p)| {
        name.as_str() != "openrouter"
            && (p.models.is_some() || p.base_url.is_some() || p.kind.is_some())
    });
    let (section, kind, model) = match direct {
        Some((name, p)) => (name.clone(), section_kind(name, p), rest.to_string()),
        // A provider that needs no URL (fake, mock, typesafe, one of yours that answers in
        // the process) is asked by its name alone.
        None if catalog.answers_in_process(prefix) => (
            prefix.to_string(),
            ProviderKind::for_section(prefix, None, None, None),
            rest.to_string(),
        ),
        None => {
            let p = config.providers.get("openrouter");
            (
                "openrouter".to_string(),
                ProviderKind::for_section(
                    "openrouter",
                    None,
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

/// Expands the config's provider sections into contenders; the providers' `catalog`
/// decides which entries are unknown models or refused request types. An entry whose kind
/// no provider is registered as is kept; the run refuses it, naming the registered ones.
pub fn expand(config: &Config, overrides: &Overrides, catalog: &dyn Catalog) -> Lineup {
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
                hits.push(bare_entry(config, catalog, m));
            }
            picked.extend(hits);
        }
        picked
    };

    let default_efforts = effort_values(&config.defaults.effort).unwrap_or_else(|| vec![None]);
    let default_temps = temp_values(&config.defaults.temperature).unwrap_or_else(|| vec![None]);
    let mut lineup = Lineup::default();
    for e in chosen {
        if let Some(why) = catalog.unknown_model(&e.kind.name, &e.section, &e.id, &e.model) {
            if !lineup.unknown.contains(&why) {
                lineup.unknown.push(why);
            }
            continue;
        }
        let rt = catalog.request_type(&e.kind.name);
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

/// The contender a judge scorer asks (`judge: { provider, model, temperature }`): the
/// provider section's kind, URL, key variable and rate limits, as a lineup entry of that
/// section would have them. A section the config does not declare is a provider's own
/// name (`openrouter`, `fake`), with its defaults.
pub fn judge_contender(config: &Config, judge: &super::config::JudgeModel) -> Contender {
    let section = judge.provider.as_str();
    let (kind, rate_limits) = match config.providers.get(section) {
        Some(p) => (
            section_kind(section, p),
            p.rate_limit
                .map(|rl| vec![(section.to_string(), rl)])
                .unwrap_or_default(),
        ),
        None => (ProviderKind::for_section(section, None, None, None), vec![]),
    };
    // An OpenRouter model is named by itself (`openai/gpt-4.1-mini`), as in the lineup.
    let id = if section == "openrouter" {
        judge.model.clone()
    } else {
        format!("{section}/{}", judge.model)
    };
    Contender {
        info: ContenderInfo {
            id,
            provider: section.to_string(),
            model: judge.model.clone(),
            effort: None,
            temperature: judge.temperature.map(|t| t.to_string()),
            max_tokens: None,
        },
        kind,
        temperature: judge.temperature,
        rate_limits,
    }
}
