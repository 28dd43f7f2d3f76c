//! The providers a run knows, by the name a config section gives: the built-ins and any a
//! Rust caller registers. The one place a section's kind becomes behaviour.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::openai::{Flavour, OpenAiCompatible};
use super::{Anthropic, Fake, Gemini, Mock, OpenAiResponses, Provider, TypeSafe};
use crate::suite::ProviderKind;
use crate::suite::lineup::{CUSTOM_KIND, RESPONSES_KIND};

/// Providers by name. [`Registry::default`] holds the built-ins: `openrouter`, `openai`,
/// `custom` (a `base_url` section), `fake`, `mock`, `typesafe`, `anthropic`, `gemini`,
/// `openai-responses` (a section with `api: responses`). Add yours with
/// [`Registry::register`] and pass the registry in
/// [`RunOptions::providers`](crate::runner::RunOptions::providers); a config section names
/// it with `kind:` (`canned: { kind: canned, models: [a] }`), or by its own name when it
/// replaces a built-in.
#[derive(Clone)]
pub struct Registry {
    by_name: BTreeMap<String, Arc<dyn Provider>>,
}

impl Default for Registry {
    fn default() -> Registry {
        let mut r = Registry {
            by_name: BTreeMap::new(),
        };
        r.register(
            "openrouter",
            OpenAiCompatible {
                flavour: Flavour::OpenRouter,
            },
        )
        .register(
            "openai",
            OpenAiCompatible {
                flavour: Flavour::OpenAi,
            },
        )
        .register(
            CUSTOM_KIND,
            OpenAiCompatible {
                flavour: Flavour::Custom,
            },
        )
        .register("fake", Fake)
        .register("mock", Mock)
        .register("typesafe", TypeSafe)
        .register("anthropic", Anthropic)
        .register("gemini", Gemini)
        .register(RESPONSES_KIND, OpenAiResponses);
        r
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.by_name.keys()).finish()
    }
}

impl Registry {
    /// Adds a provider under `name` (a config section's `kind:`), replacing one of that
    /// name.
    pub fn register(
        &mut self,
        name: impl Into<String>,
        provider: impl Provider + 'static,
    ) -> &mut Self {
        self.by_name.insert(name.into(), Arc::new(provider));
        self
    }

    /// The provider registered as `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Provider>> {
        self.by_name.get(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.by_name.keys().map(String::as_str).collect()
    }

    /// The provider serving `kind` (of the config section `section`); a kind that is not
    /// registered is a config error naming the registered ones and the fix.
    pub fn resolve(&self, kind: &ProviderKind, section: &str) -> Result<Arc<dyn Provider>, String> {
        if let Some(p) = self.get(&kind.name) {
            return Ok(p.clone());
        }
        let names = self.names();
        let hint = crate::suggest::did_you_mean(&kind.name, &names)
            .map(|s| format!(" (did you mean '{s}'?)"))
            .unwrap_or_default();
        Err(format!(
            "provider section '{section}': no provider is registered as '{}'{hint}; the registered ones are {}: fix its kind, or register the provider (llm_evals::provider::Registry::register) in the RunOptions of the run",
            kind.name,
            names.join(", ")
        ))
    }
}

/// The registry is the lineup's catalog: a contender's model is checked against its
/// provider's, and its request type is its provider's.
impl crate::suite::lineup::Catalog for Registry {
    fn unknown_model(&self, kind: &str, section: &str, id: &str, model: &str) -> Option<String> {
        self.get(kind)
            .and_then(|p| super::unknown_model(p.as_ref(), section, id, model))
    }

    fn request_type(&self, kind: &str) -> &'static str {
        self.get(kind).map_or("prompt", |p| p.request_type())
    }

    fn answers_in_process(&self, kind: &str) -> bool {
        self.get(kind).is_some_and(|p| !p.sends())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::CallError;
    use crate::provider::{ChatRequest, Completion};
    use crate::suite::{Case, Contender};

    struct Canned;

    impl Provider for Canned {
        fn answer(
            &self,
            _: &Contender,
            _: &Case,
            _: &ChatRequest,
        ) -> Result<Completion, CallError> {
            Ok(Completion {
                text: "canned".into(),
                ..Completion::default()
            })
        }
    }

    #[test]
    fn every_provider_the_config_knows_by_name_is_a_built_in() {
        // The config parser (below the providers) lists them by name for its messages.
        let r = Registry::default();
        for name in crate::suite::config::KNOWN_PROVIDERS {
            assert!(r.get(name).is_some(), "{name} is not registered");
        }
    }

    #[test]
    fn a_registered_provider_is_found_by_the_kind_its_section_names() {
        let mut r = Registry::default();
        r.register("canned", Canned);
        let kind = ProviderKind::for_section("mine", Some("canned"), None, None);
        let p = r.resolve(&kind, "mine").unwrap();
        assert!(!p.sends());
        // The built-ins stay, by section name.
        let openai = ProviderKind::for_section("openai", None, None, None);
        assert!(r.resolve(&openai, "openai").unwrap().sends());
        let local = ProviderKind::for_section("local", None, Some("http://x/"), None);
        assert_eq!(local.name, "custom");
        assert_eq!(local.base_url.as_deref(), Some("http://x"));
    }

    #[test]
    fn an_unregistered_kind_is_a_config_error_naming_the_registered_ones_and_the_fix() {
        let mut r = Registry::default();
        r.register("canned", Canned);
        let kind = ProviderKind::for_section("mine", Some("caned"), None, None);
        let err = r.resolve(&kind, "mine").err().unwrap();
        assert_eq!(
            err,
            "provider section 'mine': no provider is registered as 'caned' (did you mean 'canned'?); the registered ones are anthropic, canned, custom, fake, gemini, mock, openai, openai-responses, openrouter, typesafe: fix its kind, or register the provider (llm_evals::provider::Registry::register) in the RunOptions of the run"
        );
    }
}
