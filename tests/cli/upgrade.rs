//! `evals upgrade-config`: the agent-evals lineup and the old llm-evals one (top-level
//! `vendors:` and `direct:`) rewritten into today's provider sections, comments kept, the
//! original left as `.bak`; until then, loading such a config says to run it.

use crate::harness::{MINI_CASES, Project};

/// agent-evals-readme.txt, "The file at the suite root", as written (its adapter and scorer
/// live in Ruby there; here a scorer line stands in for them).
const AGENT_EVALS_LINEUP: &str = r#"# evals/.agent-eval.config.yml
project: my-evals            # Braintrust project name (BRAINTRUST_PROJECT_ID wins when set)
request_types: [prompt]      # required: what the suite's adapter sends
scorer: { kind: fields, schema: { answer: string } }

defaults:
  effort: default            # default sends none and leaves the model's own setting
  temperature: 0.1
  max_tokens: 8192           # covers the reasoning tokens a high effort spends
  parallelism: 4             # cases in flight per experiment; the default for -p

vendors:                     # the OpenRouter list; every entry takes a prompt
  anthropic:
    - model: claude-fable-5
    - model: claude-opus-5
    - model: claude-sonnet-5.5
    - model: claude-haiku-5.5
      effort: [default, low, high]   # a list expands into one contender per value
  openai:
    - model: gpt-4.1-mini
    - model: gpt-4o-mini
    - model: gpt-6.1-sol
  google:
    - model: gemini-2.5-flash
    - model: gemini-4-argon
  meta-llama:
    - model: llama-3.3-70b-instruct
  typesafe:
    - model: jev-router      # Jev on OpenRouter, a chat model
  moonshotai:
    - model: kimi-k3

direct:                      # a vendor's own API, one request type each
  typesafe:                  # request type "typesafe": noul, choice, score
    - model: jev-latest
"#;

/// llm-evals-readme.txt's lineup in the layout it replaced: vendors (with their rate
/// limits and `models:`) at the top, the direct provider under `direct:`.
const OLD_LLM_EVALS_LINEUP: &str = r#"request_types: [prompt]
scorer: { kind: fields, schema: { answer: string } }

vendors:                     # requires OPENROUTER_API_KEY; every entry takes a prompt
  anthropic:
    rate_limit: { burst: 10, per_minute: 50 }
    models:
      - model: claude-opus-5                  # the vendor's limit only
      - model: claude-fable-5                 # both limits
        rate_limit: { burst: 5, per_minute: 20 }
      - model: claude-haiku-5.5
        effort: [default, low, high]          # a list expands into one contender per value
  openai:                                     # no limit of its own
    models:
      - model: gpt-6.1-sol

direct:
  typesafe:                  # requires TYPESAFE_API_KEY
    models:
      - jev-latest           # a bare name is the same as `- model: jev-latest`
"#;

fn suite(config: &str) -> Project {
    Project::new()
        .file("evals/.llm-evals.config.yml", config)
        .file("evals/datasets/d/cases.jsonl", MINI_CASES)
}

#[test]
fn agent_evals_lineup_says_to_run_upgrade_config() {
    let d = suite(AGENT_EVALS_LINEUP).evals(&["compare", "-n"]).code(2);
    assert_eq!(
        d.stderr,
        "error: evals/.llm-evals.config.yml:12:1: top-level 'vendors:': this is the agent-evals/old llm-evals layout (OpenRouter models now go under `openrouter: vendors:`, each `direct:` provider is a section of its own): run `evals upgrade-config` (add -n to preview)\n"
    );
}

#[test]
fn upgrade_config_rewrites_the_agent_evals_lineup_so_compare_n_runs() {
    let p = suite(AGENT_EVALS_LINEUP);
    let d = p.evals(&["upgrade-config"]).ok();
    d.stderr_has("upgraded evals/.llm-evals.config.yml")
        .stderr_has("the original is evals/.llm-evals.config.yml.bak");
    assert_eq!(
        p.read("evals/.llm-evals.config.yml.bak"),
        AGENT_EVALS_LINEUP
    );
    let new = p.read("evals/.llm-evals.config.yml");
    for kept in [
        "# evals/.agent-eval.config.yml\n",
        "openrouter:                  # the OpenRouter list; every entry takes a prompt\n  vendors:\n    anthropic:\n      models:\n        - model: claude-fable-5\n",
        "        - model: claude-haiku-5.5\n          effort: [default, low, high]   # a list expands into one contender per value\n",
        "        - model: jev-router      # Jev on OpenRouter, a chat model\n",
        "# a vendor's own API, one request type each\ntypesafe:                  # request type \"typesafe\": noul, choice, score\n  models:\n    - model: jev-latest\n",
    ] {
        assert!(new.contains(kept), "lacks {kept:?}\n--- new\n{new}");
    }
    let d = p.evals(&["compare", "-n"]).ok();
    // 14 OpenRouter contenders (haiku three times), the direct typesafe one refused.
    d.stdout_has("14 contenders × 1 dataset")
        .stderr_has("typesafe/jev-latest refused");
    for id in [
        "anthropic/claude-haiku-5.5",
        "typesafe/jev-router",
        "moonshotai/kimi-k3",
    ] {
        d.stdout_has(id);
    }
    // A second upgrade has nothing left to do.
    p.evals(&["upgrade-config"])
        .ok()
        .stderr_has("already in today's layout");
}

#[test]
fn upgrade_config_rewrites_the_old_llm_evals_lineup_keeping_rate_limits() {
    let p = suite(OLD_LLM_EVALS_LINEUP);
    p.evals(&["cases"])
        .code(2)
        .stderr_has(":4:1: top-level 'vendors:': this is the agent-evals/old llm-evals layout");
    p.evals(&["upgrade-config"]).ok();
    let new = p.read("evals/.llm-evals.config.yml");
    assert!(
        new.contains("openrouter:                  # requires OPENROUTER_API_KEY; every entry takes a prompt\n  vendors:\n    anthropic:\n      rate_limit: { burst: 10, per_minute: 50 }\n      models:\n        - model: claude-opus-5                  # the vendor's limit only\n"),
        "{new}"
    );
    assert!(
        new.contains("typesafe:                  # requires TYPESAFE_API_KEY\n  models:\n    - jev-latest           # a bare name is the same as `- model: jev-latest`\n"),
        "{new}"
    );
    p.evals(&["compare", "-n"])
        .ok()
        .stdout_has("6 contenders × 1 dataset");
}

#[test]
fn upgrade_config_n_prints_the_result_or_the_diff_and_writes_nothing() {
    let p = suite(AGENT_EVALS_LINEUP);
    // -n prints the upgraded config itself: it loads as it is.
    let d = p.evals(&["upgrade-config", "-n"]).ok();
    d.stdout_has("openrouter:                  # the OpenRouter list; every entry takes a prompt\n  vendors:\n")
        .stderr_has("-n: nothing was written");
    assert!(!d.stdout.contains("\nvendors:"), "{}", d.stdout);
    let preview = Project::new()
        .file("evals/.llm-evals.config.yml", &d.stdout)
        .file("evals/datasets/d/cases.jsonl", MINI_CASES);
    preview.evals(&["compare", "-n"]).ok();
    let d = p.evals(&["upgrade-config", "-n", "--diff"]).ok();
    d.stdout_has("--- evals/.llm-evals.config.yml\n+++ evals/.llm-evals.config.yml\n")
        .stdout_has("\n-vendors:                     # the OpenRouter list; every entry takes a prompt\n")
        .stdout_has("\n+openrouter:                  # the OpenRouter list; every entry takes a prompt\n+  vendors:\n")
        .stderr_has("-n: nothing was written");
    assert_eq!(p.read("evals/.llm-evals.config.yml"), AGENT_EVALS_LINEUP);
    assert!(!p.path().join("evals/.llm-evals.config.yml.bak").exists());
}

#[test]
fn upgrade_config_turns_an_agent_eval_config_into_an_llm_evals_one_beside_it() {
    let p = Project::new()
        .file("evals/.agent-eval.config.yml", AGENT_EVALS_LINEUP)
        .file("evals/datasets/d/cases.jsonl", MINI_CASES);
    p.evals(&["upgrade-config"])
        .ok()
        .stderr_has("evals/.agent-eval.config.yml is left as it was");
    assert_eq!(p.read("evals/.agent-eval.config.yml"), AGENT_EVALS_LINEUP);
    p.evals(&["compare", "-n"])
        .ok()
        .stdout_has("14 contenders × 1 dataset");
}

#[test]
fn upgrade_config_keeps_the_users_own_text_byte_for_byte_even_a_password() {
    // The config is the user's own file: the egress scrubber must not touch what
    // upgrade-config writes back (a password in a base_url would be lost, the config broken).
    let lineup = AGENT_EVALS_LINEUP.replace(
        "vendors:                     # the OpenRouter list",
        "local:\n  base_url: https://alice:hunter2secret@llm.internal/v1\n  models: [m1]\n\nvendors:                     # the OpenRouter list",
    );
    let p = suite(&lineup);
    p.evals(&["upgrade-config"]).ok();
    assert_eq!(p.read("evals/.llm-evals.config.yml.bak"), lineup);
    let new = p.read("evals/.llm-evals.config.yml");
    assert!(
        new.contains("https://alice:hunter2secret@llm.internal/v1"),
        "{new}"
    );
}

#[test]
fn upgrade_config_never_overwrites_an_earlier_bak_and_names_the_one_it_wrote() {
    let p =
        suite(OLD_LLM_EVALS_LINEUP).file("evals/.llm-evals.config.yml.bak", "an earlier backup\n");
    p.evals(&["upgrade-config", "-n"])
        .ok()
        .stderr_has("(the original kept as evals/.llm-evals.config.yml.bak.1)");
    p.evals(&["upgrade-config"])
        .ok()
        .stderr_has("the original is evals/.llm-evals.config.yml.bak.1\n");
    assert_eq!(
        p.read("evals/.llm-evals.config.yml.bak"),
        "an earlier backup\n"
    );
    assert_eq!(
        p.read("evals/.llm-evals.config.yml.bak.1"),
        OLD_LLM_EVALS_LINEUP
    );
}
