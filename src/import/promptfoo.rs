//! `evals import promptfoo`: a promptfoo config (`promptfooconfig.yaml`) read into an
//! equivalent suite, as files in memory ([`Imported`]); what has no equivalent is listed
//! with its file and line ([`Untranslated`]), never dropped silently.
//!
//! The mapping (docs/src/import.md has the table): prompts → the prompt adapter's user
//! template (several prompts: one dataset each, the template choosing by
//! `case.dataset`); providers → provider sections (`openai`, `anthropic`, `gemini`, an
//! OpenAI-compatible section for an `apiBaseUrl`); tests (inline, `file://` CSV, YAML or
//! JSON) → one JSONL case each; `equals`, `contains`, `icontains`, `regex`, `is-json`, ...
//! → the assertions scorer's `expect`; `javascript`, `python`, `contains-json` → an exec
//! scorer written beside the config (`promptfoo_asserts.py`); `llm-rubric` → a judge.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value as J, json};

use super::node::{self, Node, Value};
use crate::error::{Error, Result};

/// The largest config or referenced file read (a promptfoo config is written by hand).
const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// Past this many YAML nodes a config is an alias bomb.
const MAX_NODES: usize = 200_000;

/// The exec scorer written when a test uses code assertions.
pub const ASSERT_SCRIPT: &str = "promptfoo_asserts.py";
/// The exec adapter's worker for a script provider, and its settings.
pub const SCRIPT_PROVIDER: &str = "promptfoo_provider.py";
const SCRIPT_PROVIDER_CONFIG: &str = "promptfoo_provider.json";
/// The judge's rubric template, beside the config.
const RUBRIC_FILE: &str = "prompts/rubric.md";
/// The user template, beside the config.
const USER_FILE: &str = "prompts/user.md";
/// The notes on the import, beside the config.
pub const NOTES_FILE: &str = "IMPORTED.md";
/// promptfoo's default grader for `llm-rubric` when the config names none.
const DEFAULT_GRADER: &str = "openai:gpt-4.1-2025-04-14";

/// A part of the promptfoo config the import could not carry over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untranslated {
    /// The file, as shown to the user (the config or a file it references).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What it is (`assert type: similar`).
    pub what: String,
    /// Why it was not translated, and what to do.
    pub why: String,
}

impl std::fmt::Display for Untranslated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.file, self.line, self.what, self.why
        )
    }
}

/// The suite written from a promptfoo config: files by their path under the suite folder.
#[derive(Debug, Clone)]
pub struct Imported {
    /// Each file's text by its path under the suite folder.
    pub files: BTreeMap<String, String>,
    /// What was not translated, in the order met.
    pub untranslated: Vec<Untranslated>,
    /// Tests imported (each a case in every dataset).
    pub tests: usize,
    /// The contenders' ids (`openai/gpt-4.1-mini`).
    pub contenders: Vec<String>,
}

/// Reads the promptfoo config at `config` (`shown`: its name in messages) into a suite.
/// `target` is the suite folder to be written (`evals` by default); the exec scorer and
/// adapter run from its parent, the project folder, and their commands name it. A missing or
/// unreadable file, or YAML that does not parse, is an error naming it (and the line).
pub fn import(config: &Path, shown: &str, target: &Path) -> Result<Imported> {
    let suite_dir = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "evals".into());
    let project = target.parent().map(Path::to_path_buf).unwrap_or_default();
    let text = crate::fs::read_regular_text(config, shown, MAX_FILE_BYTES)?;
    let root = parse_yaml(&text, shown)?.unwrap_or(Node {
        line: 1,
        value: Value::Map(Vec::new()),
    });
    if !root.is_map() {
        return Err(Error::Config(format!(
            "{shown}:{}: a promptfoo config is a mapping (prompts:, providers:, tests:), not {}",
            root.line,
            kind(&root)
        )));
    }
    let base = config.parent().map(Path::to_path_buf).unwrap_or_default();
    let shown_base = Path::new(shown)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut cx = Cx {
        base,
        shown_base,
        shown: shown.to_string(),
        root: root.clone(),
        untranslated: Vec::new(),
        scripts: Vec::new(),
    };
    cx.run(&root, &suite_dir, &project)
}

fn parse_yaml(text: &str, shown: &str) -> Result<Option<Node>> {
    node::parse(text, MAX_NODES).map_err(|e| {
        if let Some(u) = crate::suite::yaml::unclosed_flow(text) {
            return Error::Config(format!(
                "{shown}:{}:{}: not valid YAML: this `{}` is never closed; add the `{}` (promptfoo would not read it either)",
                u.line,
                u.column,
                u.open,
                u.close()
            ));
        }
        Error::Config(format!(
            "{shown}:{}:{}: not valid YAML: {}; fix the file (promptfoo would not read it either)",
            e.line, e.column, e.message
        ))
    })
}

fn kind(n: &Node) -> &'static str {
    match n.value {
        Value::Scalar { .. } => "a scalar",
        Value::Seq(_) => "a list",
        Value::Map(_) => "a mapping",
    }
}

/// One prompt: its dataset name, its template text, where it came from.
struct Prompt {
    dataset: String,
    text: String,
}

/// One provider section being built: its kind's keys and models.
#[derive(Default)]
struct Section {
    base_url: Option<String>,
    api_key_env: Option<String>,
    /// Each model's entry (`"gpt-4.1"` or `{ model: ..., temperature: ... }`) and name.
    models: Vec<(String, String)>,
}

/// A test, translated.
#[derive(Default)]
struct Test {
    description: Option<String>,
    vars: Map<String, J>,
    expect: Map<String, J>,
    code: Vec<J>,
    rubric: Option<(String, f64)>,
    metadata: Map<String, J>,
}

/// An assertion read from YAML or from a CSV cell.
struct Assertion {
    kind: String,
    value: Option<J>,
    threshold: Option<f64>,
    file: String,
    line: usize,
    /// Set when the YAML form has keys this import does not carry (`weight`, `metric`...).
    extra: Vec<String>,
}

struct Cx {
    /// The config's folder, where `file://` references resolve.
    base: PathBuf,
    shown_base: PathBuf,
    shown: String,
    root: Node,
    untranslated: Vec<Untranslated>,
    /// Script providers (`exec:`, `python:`, `file://x.py`): id, line, config.
    scripts: Vec<(String, usize, J)>,
}

impl Cx {
    fn skip(&mut self, file: &str, line: usize, what: impl Into<String>, why: impl Into<String>) {
        self.untranslated.push(Untranslated {
            file: file.to_string(),
            line,
            what: what.into(),
            why: why.into(),
        });
    }

    fn skip_here(&mut self, line: usize, what: impl Into<String>, why: impl Into<String>) {
        let file = self.shown.clone();
        self.skip(&file, line, what, why);
    }

    /// A `file://` reference resolved beside the config, and its name as shown.
    fn reference(&self, r: &str) -> (PathBuf, String) {
        let rel = r.strip_prefix("file://").unwrap_or(r);
        let path = self.base.join(rel);
        let shown = self.shown_base.join(rel).display().to_string();
        (path, shown)
    }

    fn read(&self, r: &str) -> Result<(String, String)> {
        let (path, shown) = self.reference(r);
        let text = crate::fs::read_regular_text(&path, &shown, MAX_FILE_BYTES)
            .map_err(|e| referenced(e, &self.shown))?;
        Ok((text, shown))
    }

    fn run(&mut self, root: &Node, suite_dir: &str, project: &Path) -> Result<Imported> {
        const KNOWN: &[&str] = &[
            "description",
            "prompts",
            "providers",
            "tests",
            "defaultTest",
            "assertionTemplates",
        ];
        for (k, _) in root.entries() {
            let key = k.str().unwrap_or_default();
            if !KNOWN.contains(&key) {
                let why = match key {
                    "outputPath" => {
                        "evals writes its reports with -o/--format and `results:`; no key of the suite writes them"
                    }
                    "scenarios" => "no equivalent: write each scenario's tests as cases",
                    "env" => "evals reads keys from the environment or the config's env_files",
                    _ => "no equivalent in an evals suite",
                };
                self.skip_here(k.line, format!("top-level key `{key}`"), why);
            }
        }
        let description = root
            .get("description")
            .and_then(Node::str)
            .map(str::to_string);
        let prompts = self.prompts(root.get("prompts"))?;
        let (sections, mut contenders) = self.providers(root.get("providers"));
        let scripts = std::mem::take(&mut self.scripts);
        let mut script: Option<(String, J)> = None;
        for (id, line, cfg) in scripts {
            if !sections.is_empty() {
                self.skip_here(
                    line,
                    format!("provider `{id}`"),
                    "a script provider beside model providers: a suite has one adapter; import the script from a config of its own (it becomes an exec adapter)",
                );
            } else if script.is_some() {
                self.skip_here(
                    line,
                    format!("provider `{id}`"),
                    "a second script provider: the suite's exec adapter runs the first; import this one into a suite of its own",
                );
            } else {
                script = Some((id, cfg));
            }
        }
        let default = root.get("defaultTest").cloned();
        let mut tests = self.tests(root.get("tests"), default.as_ref())?;
        let grader = default
            .as_ref()
            .and_then(|d| d.get("options"))
            .and_then(|o| o.get("provider"))
            .cloned();

        let any_code = tests.iter().any(|t| !t.code.is_empty());
        let any_rubric = tests.iter().any(|t| t.rubric.is_some());

        // Case ids: the description as a slug, else `test-N`; unique.
        let mut seen = std::collections::HashSet::new();
        let mut lines = String::new();
        for (i, t) in tests.iter_mut().enumerate() {
            let base = t
                .description
                .as_deref()
                .map(slug)
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| format!("test-{}", i + 1));
            let mut id = base.clone();
            let mut n = 2;
            while !seen.insert(id.clone()) {
                id = format!("{base}-{n}");
                n += 1;
            }
            let mut case = Map::new();
            case.insert("id".into(), J::String(id));
            case.insert("input".into(), J::Object(t.vars.clone()));
            if !t.expect.is_empty() {
                case.insert("expect".into(), J::Object(t.expect.clone()));
            }
            let mut metadata = t.metadata.clone();
            if let Some(d) = &t.description {
                metadata.insert("description".into(), J::String(d.clone()));
            }
            if !t.code.is_empty() {
                metadata.insert("promptfoo_code".into(), J::Array(t.code.clone()));
            }
            if any_rubric {
                // Every case has the key: empty, the judge's rubric renders to nothing and
                // the judge is not asked.
                let text = t
                    .rubric
                    .as_ref()
                    .map(|(r, _)| r.clone())
                    .unwrap_or_default();
                metadata.insert("llm_rubric".into(), J::String(text));
            }
            if let Some((_, threshold)) = &t.rubric {
                case.insert("minimum_scores".into(), json!({ "rubric": threshold }));
            }
            if !metadata.is_empty() {
                case.insert("metadata".into(), J::Object(metadata));
            }
            lines.push_str(&serde_json::to_string(&J::Object(case)).unwrap_or_default());
            lines.push('\n');
        }

        let mut files = BTreeMap::new();
        for p in &prompts {
            files.insert(format!("datasets/{}/cases.jsonl", p.dataset), lines.clone());
        }
        if script.is_none() {
            files.insert(USER_FILE.to_string(), user_template(&prompts));
        }

        // The config.
        let name = std::path::absolute(&self.base)
            .ok()
            .as_deref()
            .and_then(Path::file_name)
            .map(|n| slug(&n.to_string_lossy()))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "imported".into());
        let mut c = String::new();
        c.push_str(&format!(
            "# Imported from {} by `evals import promptfoo`. What it could not translate is\n# listed in {NOTES_FILE}; the mapping: \"Importing a promptfoo config\" in the evals book.\n",
            self.shown
        ));
        c.push_str(&format!("suite: {}\n", q(&name)));
        if let Some(d) = &description {
            c.push_str(&format!("description: {}\n", q(d)));
        }
        c.push_str("version: 1\nrequest_types: [prompt]\n\n");
        match &script {
            None => c.push_str(&format!(
                "adapter:\n  kind: prompt\n  user: {USER_FILE}\n\n"
            )),
            Some((id, cfg)) => {
                // The script runs from the promptfoo config's folder, as promptfoo runs it.
                let base = std::path::absolute(&self.base).unwrap_or_else(|_| self.base.clone());
                let project =
                    std::path::absolute(project).unwrap_or_else(|_| project.to_path_buf());
                let base = match base.strip_prefix(&project) {
                    Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
                    Ok(rel) => rel.display().to_string(),
                    Err(_) => base.display().to_string(),
                };
                let texts: Map<String, J> = prompts
                    .iter()
                    .map(|p| (p.dataset.clone(), J::String(p.text.clone())))
                    .collect();
                let shim = json!({ "provider": id, "config": cfg, "base": base, "prompts": texts });
                files.insert(
                    SCRIPT_PROVIDER_CONFIG.to_string(),
                    serde_json::to_string_pretty(&shim).unwrap_or_default() + "\n",
                );
                files.insert(SCRIPT_PROVIDER.to_string(), PROVIDER_SCRIPT.to_string());
                c.push_str(&format!(
                    "adapter:                           # promptfoo's provider `{id}`, run by the worker\n  kind: exec\n  command: [python3, {}/{SCRIPT_PROVIDER}]\n\n",
                    suite_dir.trim_end_matches('/')
                ));
            }
        }
        c.push_str("scorer:\n  - kind: assertions\n");
        if any_code {
            files.insert(ASSERT_SCRIPT.to_string(), SCRIPT.to_string());
            c.push_str(&format!(
                "  - kind: exec                     # promptfoo's javascript, python and contains-json assertions\n    command: [python3, {}/{ASSERT_SCRIPT}]\n    metrics:\n      - {{ name: code, description: \"promptfoo code assertions: their mean score\" }}\n",
                suite_dir.trim_end_matches('/')
            ));
        }
        if any_rubric {
            let (kind, model) = self.grader(grader.as_ref());
            files.insert(RUBRIC_FILE.to_string(), RUBRIC.to_string());
            c.push_str(&format!(
                "  - kind: judge                    # promptfoo's llm-rubric\n    judge: {{ provider: {kind}, model: {}, temperature: 0 }}\n    rubric: {RUBRIC_FILE}\n    scale: [0, 1]\n    metrics:\n      - {{ name: rubric, description: \"the case's llm-rubric\" }}\n",
                q(&model)
            ));
        }
        c.push('\n');
        for (section, s) in &sections {
            c.push_str(&format!("{section}:\n"));
            if let Some(u) = &s.base_url {
                c.push_str(&format!("  base_url: {}\n", q(u)));
            }
            if let Some(k) = &s.api_key_env {
                c.push_str(&format!("  api_key_env: {k}\n"));
            }
            c.push_str("  models:\n");
            for (entry, _) in &s.models {
                c.push_str(&format!("    - {entry}\n"));
            }
        }
        if script.is_some() {
            c.push_str("# The contender is the script the exec adapter runs: fake/echo only names it (the\n# script calls no model through the gateway).\nfake:\n  models: [echo]\n");
            contenders.push("fake/echo".into());
        } else if sections.is_empty() {
            c.push_str("# No provider of the promptfoo config could be translated: add a section (docs/src/providers.md).\nfake:\n  models: [echo]\n");
        }
        files.insert(".llm-evals.config.yml".to_string(), c);
        self.untranslated
            .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        files.insert(NOTES_FILE.to_string(), self.notes());

        Ok(Imported {
            files,
            untranslated: self.untranslated.clone(),
            tests: tests.len(),
            contenders,
        })
    }

    /// The judge's section and model: `defaultTest.options.provider`, else promptfoo's
    /// default grader.
    fn grader(&mut self, given: Option<&Node>) -> (String, String) {
        let id = given
            .and_then(|g| {
                g.str()
                    .map(str::to_string)
                    .or_else(|| g.get("id").and_then(Node::str).map(str::to_string))
            })
            .unwrap_or_else(|| DEFAULT_GRADER.to_string());
        match native(&id) {
            Some((section, model)) => (section.to_string(), model),
            None => {
                let line = given.map_or(1, |g| g.line);
                self.skip_here(
                    line,
                    format!("grader provider `{id}`"),
                    format!("not a provider evals speaks; the judge uses {DEFAULT_GRADER} instead"),
                );
                let (s, m) = native(DEFAULT_GRADER).unwrap_or(("openai", String::new()));
                (s.to_string(), m)
            }
        }
    }

    fn notes(&self) -> String {
        let mut n = format!(
            "# Imported from promptfoo\n\nThis suite was written by `evals import promptfoo {}`. The mapping, and where\nits semantics differ from promptfoo's, is in the evals book: \"Importing a promptfoo config\".\n\n",
            self.shown
        );
        if self.untranslated.is_empty() {
            n.push_str("Every part of the config was translated.\n");
        } else {
            n.push_str("## Not translated\n\n");
            for u in &self.untranslated {
                n.push_str(&format!(
                    "- `{}:{}`: {}: {}\n",
                    u.file, u.line, u.what, u.why
                ));
            }
        }
        n
    }

    // ---- prompts ---------------------------------------------------------------------

    fn prompts(&mut self, node: Option<&Node>) -> Result<Vec<Prompt>> {
        let Some(node) = node else {
            return Err(Error::Config(format!(
                "{}: no `prompts:`; a promptfoo config needs at least one prompt",
                self.shown
            )));
        };
        let items: Vec<Node> = if node.is_seq() {
            node.items().to_vec()
        } else if node.is_map() {
            // `prompts: {file://a.txt: label}`.
            node.entries()
                .iter()
                .map(|(k, v)| Node {
                    line: k.line,
                    value: Value::Map(vec![
                        (scalar("raw", k.line), k.clone()),
                        (scalar("label", v.line), v.clone()),
                    ]),
                })
                .collect()
        } else {
            vec![node.clone()]
        };
        let mut out: Vec<(Option<String>, String)> = Vec::new();
        for item in &items {
            let (raw, label) = if let Some(s) = item.str() {
                (s.to_string(), None)
            } else if let Some(raw) = item
                .get("raw")
                .or_else(|| item.get("id"))
                .and_then(Node::str)
            {
                (
                    raw.to_string(),
                    item.get("label").and_then(Node::str).map(str::to_string),
                )
            } else {
                self.skip_here(
                    item.line,
                    "prompt",
                    "not a string, `file://` reference or {raw|id, label}",
                );
                continue;
            };
            if let Some(r) = raw.strip_prefix("file://") {
                let ext = Path::new(r)
                    .extension()
                    .and_then(|e| e.to_str())
                    .unwrap_or("");
                if r.contains('*') {
                    self.skip_here(
                        item.line,
                        format!("prompt `{raw}`"),
                        "a glob of prompt files: list the files one by one",
                    );
                    continue;
                }
                match ext {
                    "txt" | "md" | "j2" | "" => {
                        let (text, _) = self.read(&raw)?;
                        let parts = if ext == "txt" || ext.is_empty() {
                            split_prompts(&text)
                        } else {
                            vec![text.trim_end().to_string()]
                        };
                        let many = parts.len() > 1;
                        for (i, p) in parts.into_iter().enumerate() {
                            let l = match (&label, many) {
                                (Some(l), true) => Some(format!("{l}-{}", i + 1)),
                                (l, _) => l.clone(),
                            };
                            out.push((l, p));
                        }
                    }
                    _ => self.skip_here(
                        item.line,
                        format!("prompt `{raw}`"),
                        "a chat (JSON/YAML) or function prompt: evals' prompt adapter sends a system and a user template; write them, or use an exec adapter",
                    ),
                }
            } else {
                out.push((label, raw));
            }
        }
        if out.is_empty() {
            return Err(Error::Config(format!(
                "{}:{}: no prompt could be translated (see the list above); nothing written",
                self.shown, node.line
            )));
        }
        let single = out.len() == 1;
        let mut names = std::collections::HashSet::new();
        Ok(out
            .into_iter()
            .enumerate()
            .map(|(i, (label, text))| {
                let mut dataset = if single {
                    "tests".to_string()
                } else {
                    label
                        .as_deref()
                        .map(slug)
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| format!("prompt-{}", i + 1))
                };
                if !names.insert(dataset.clone()) {
                    dataset = format!("prompt-{}", i + 1);
                    names.insert(dataset.clone());
                }
                Prompt { dataset, text }
            })
            .collect())
    }

    // ---- providers -------------------------------------------------------------------

    fn providers(&mut self, node: Option<&Node>) -> (BTreeMap<String, Section>, Vec<String>) {
        let mut sections: BTreeMap<String, Section> = BTreeMap::new();
        let mut contenders = Vec::new();
        let Some(node) = node else {
            self.skip_here(
                1,
                "providers",
                "the config names no provider: add a section to the suite",
            );
            return (sections, contenders);
        };
        let items: Vec<Node> = if node.is_seq() {
            node.items().to_vec()
        } else {
            vec![node.clone()]
        };
        for item in &items {
            // `- openai:gpt-4`, `- {id: ..., config: ...}`, `- openai:gpt-4: {config: ...}`.
            let (id, config, label) = if let Some(s) = item.str() {
                (s.to_string(), None, None)
            } else if let Some(id) = item.get("id").and_then(Node::str) {
                (
                    id.to_string(),
                    item.get("config").cloned(),
                    item.get("label").and_then(Node::str).map(str::to_string),
                )
            } else if item.entries().len() == 1 {
                let (k, v) = &item.entries()[0];
                (
                    k.str().unwrap_or_default().to_string(),
                    v.get("config").cloned(),
                    v.get("label").and_then(Node::str).map(str::to_string),
                )
            } else {
                self.skip_here(item.line, "provider", "not a provider id or {id, config}");
                continue;
            };
            let base_url = config
                .as_ref()
                .and_then(|c| c.get("apiBaseUrl").or_else(|| c.get("apiHost")))
                .and_then(Node::str)
                .map(str::to_string);
            if let Some(cfg) = &config {
                for (k, _) in cfg.entries() {
                    let key = k.str().unwrap_or_default();
                    if !matches!(
                        key,
                        "apiBaseUrl" | "apiHost" | "apiKeyEnvar" | "temperature" | "max_tokens"
                    ) {
                        self.skip_here(
                            k.line,
                            format!("provider `{id}` config `{key}`"),
                            "provider settings other than the base URL, key variable, temperature and max_tokens are not carried over",
                        );
                    }
                }
            }
            let Some((kind, model)) = native(&id) else {
                if id.starts_with("exec:")
                    || id.starts_with("python:")
                    || (id.starts_with("file://") && id.contains(".py"))
                {
                    let cfg = config.as_ref().map_or(J::Object(Map::new()), Node::to_json);
                    self.scripts.push((id, item.line, cfg));
                    continue;
                }
                self.skip_here(
                    item.line,
                    format!("provider `{id}`"),
                    "no provider of that kind in evals (openai, anthropic, google/vertex, OpenAI-compatible ones and exec:/python: scripts translate)",
                );
                continue;
            };
            let section_name = match &base_url {
                Some(_) if kind == "openai" => {
                    let base = label
                        .as_deref()
                        .map(slug)
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| "compatible".into());
                    let mut name = base.clone();
                    let mut n = 2;
                    while sections.get(&name).is_some_and(|s| s.base_url != base_url)
                        || is_native_section(&name)
                    {
                        name = format!("{base}-{n}");
                        n += 1;
                    }
                    name
                }
                _ => kind.to_string(),
            };
            let s = sections.entry(section_name.clone()).or_default();
            if base_url.is_some() {
                s.base_url = base_url.clone();
                if kind == "openai" {
                    s.api_key_env = Some(
                        config
                            .as_ref()
                            .and_then(|c| c.get("apiKeyEnvar"))
                            .and_then(Node::str)
                            .unwrap_or("OPENAI_API_KEY")
                            .to_string(),
                    );
                }
            }
            let setting = |k: &str| {
                config
                    .as_ref()
                    .and_then(|c| c.get(k))
                    .and_then(Node::number)
            };
            let mut entry = q(&model);
            let (t, m) = (setting("temperature"), setting("max_tokens"));
            if t.is_some() || m.is_some() {
                entry = format!("{{ model: {entry}");
                if let Some(t) = t {
                    entry.push_str(&format!(", temperature: {t}"));
                }
                if let Some(m) = m {
                    entry.push_str(&format!(", max_tokens: {m}"));
                }
                entry.push_str(" }");
            }
            if !s.models.iter().any(|(e, _)| *e == entry) {
                s.models.push((entry, model.clone()));
                contenders.push(format!("{section_name}/{model}"));
            }
        }
        (sections, contenders)
    }

    // ---- tests -----------------------------------------------------------------------

    fn tests(&mut self, node: Option<&Node>, default: Option<&Node>) -> Result<Vec<Test>> {
        // defaultTest: vars under each test's, assertions before each test's.
        let mut default_vars = Map::new();
        let mut default_asserts: Vec<Assertion> = Vec::new();
        if let Some(d) = default {
            if let Some(v) = d.get("vars") {
                default_vars = self.vars(v)?;
            }
            if let Some(a) = d.get("assert") {
                default_asserts = self.asserts(a);
            }
            for (k, _) in d.entries() {
                let key = k.str().unwrap_or_default();
                match key {
                    "vars" | "assert" => {}
                    "options" => {
                        for (ok, _) in d.get("options").map(Node::entries).unwrap_or_default() {
                            if ok.str() != Some("provider") {
                                self.skip_here(
                                    ok.line,
                                    format!("defaultTest.options.{}", ok.str().unwrap_or_default()),
                                    "no equivalent option in evals",
                                );
                            }
                        }
                    }
                    _ => self.skip_here(
                        k.line,
                        format!("defaultTest.{key}"),
                        "no equivalent in an evals suite",
                    ),
                }
            }
        }
        let Some(node) = node else {
            return Ok(vec![self.test_from(None, default_vars, default_asserts)]);
        };
        // The tests' rows: (vars, asserts, description, file, line).
        let mut out = Vec::new();
        let mut sources: Vec<Node> = Vec::new();
        if node.is_seq() {
            sources.extend(node.items().iter().cloned());
        } else {
            sources.push(node.clone());
        }
        for src in sources {
            if let Some(r) = src.str() {
                if r.starts_with("file://") {
                    for t in self.tests_file(r, src.line)? {
                        let merged = merge(&default_vars, &t.vars);
                        let mut asserts = clone_asserts(&default_asserts);
                        asserts.extend(t.asserts);
                        let mut test = self.test_from(t.description, merged, asserts);
                        test.metadata.extend(t.metadata);
                        out.push(test);
                    }
                } else {
                    self.skip_here(
                        src.line,
                        format!("tests `{r}`"),
                        "a test list is `file://` CSV, YAML or JSON, or inline mappings",
                    );
                }
                continue;
            }
            if !src.is_map() {
                self.skip_here(src.line, "test", "not a mapping");
                continue;
            }
            let shown = self.shown.clone();
            out.push(self.inline_test(&src, &default_vars, &default_asserts, &shown)?);
        }
        Ok(out)
    }

    fn inline_test(
        &mut self,
        src: &Node,
        default_vars: &Map<String, J>,
        default_asserts: &[Assertion],
        file: &str,
    ) -> Result<Test> {
        let mut vars = default_vars.clone();
        if let Some(v) = src.get("vars") {
            vars.extend(self.vars(v)?);
        }
        let mut asserts = clone_asserts(default_asserts);
        if let Some(a) = src.get("assert") {
            asserts.extend(self.asserts(a));
        }
        for (k, v) in src.entries() {
            let key = k.str().unwrap_or_default();
            match key {
                "vars" | "assert" | "description" | "metadata" => {}
                "threshold" => self.skip(
                    file,
                    k.line,
                    format!("test threshold {}", v.str().unwrap_or_default()),
                    "evals passes a case when every assertion passes; a weighted pass mark over assertions has no equivalent",
                ),
                _ => self.skip(file, k.line, format!("test key `{key}`"), "no equivalent in an evals case"),
            }
        }
        let description = src
            .get("description")
            .and_then(Node::str)
            .map(str::to_string);
        let mut t = self.test_from(description, vars, asserts);
        if let Some(J::Object(m)) = src.get("metadata").map(Node::to_json) {
            t.metadata.extend(m);
        }
        Ok(t)
    }

    /// A test's vars: a mapping (a `file://` value read as the file's text) or a
    /// `file://` reference to a YAML/JSON mapping.
    fn vars(&mut self, node: &Node) -> Result<Map<String, J>> {
        if let Some(r) = node.str()
            && r.starts_with("file://")
        {
            let (text, shown) = self.read(r)?;
            let doc = parse_yaml(&text, &shown)?;
            return Ok(match doc.map(|d| d.to_json()) {
                Some(J::Object(m)) => m,
                _ => {
                    self.skip_here(
                        node.line,
                        format!("vars `{r}`"),
                        "not a mapping of variables",
                    );
                    Map::new()
                }
            });
        }
        let mut out = Map::new();
        for (k, v) in node.entries() {
            let key = k.str().unwrap_or_default().to_string();
            if v.is_seq() {
                self.skip_here(
                    v.line,
                    format!("var `{key}` (a list)"),
                    "promptfoo runs one test per value of a list var: write one case per value; the list is kept as the var's value",
                );
            }
            let value = match v.str() {
                Some(r) if r.starts_with("file://") && !v.is_seq() => {
                    let (text, _) = self.read(r)?;
                    J::String(text)
                }
                _ => match v.to_json() {
                    // Vars are text in a prompt: a plain `Yes` or `3` stays as written.
                    J::Bool(_) | J::Number(_) => J::String(v.str().unwrap_or_default().to_string()),
                    j => j,
                },
            };
            out.insert(key, value);
        }
        Ok(out)
    }

    fn asserts(&mut self, node: &Node) -> Vec<Assertion> {
        let mut out = Vec::new();
        for a in node.items() {
            let a = match a.get("$ref").and_then(Node::str) {
                Some(r) => match self.resolve_ref(r) {
                    Some(n) => Node {
                        line: a.line,
                        value: n.value,
                    },
                    None => {
                        self.skip_here(
                            a.line,
                            format!("assertion `$ref: {r}`"),
                            "the reference points at nothing in the config",
                        );
                        continue;
                    }
                },
                None => a.clone(),
            };
            let Some(kind) = a.get("type").and_then(Node::str) else {
                self.skip_here(a.line, "assertion", "no `type:`");
                continue;
            };
            let mut extra = Vec::new();
            for (k, v) in a.entries() {
                match k.str().unwrap_or_default() {
                    "type" | "value" | "threshold" => {}
                    "weight" if v.number() == Some(1.0) => {}
                    other => extra.push(other.to_string()),
                }
            }
            out.push(Assertion {
                kind: kind.to_string(),
                value: a.get("value").map(|v| match v.str() {
                    // A value is text unless written as a mapping or list.
                    Some(s) => J::String(s.to_string()),
                    None => v.to_json(),
                }),
                threshold: a.get("threshold").and_then(Node::number),
                file: self.shown.clone(),
                line: a.line,
                extra,
            });
        }
        out
    }

    fn resolve_ref(&self, r: &str) -> Option<Node> {
        let path = r.strip_prefix("#/")?;
        let mut n = &self.root;
        for part in path.split('/') {
            n = n.get(part)?;
        }
        Some(n.clone())
    }

    /// The tests of a `file://` CSV, YAML or JSON file.
    fn tests_file(&mut self, r: &str, line: usize) -> Result<Vec<FileTest>> {
        let (text, shown) = self.read(r)?;
        let ext = Path::new(r)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("");
        match ext {
            "csv" => self.csv_tests(&text, &shown),
            "yaml" | "yml" | "json" => {
                let doc = parse_yaml(&text, &shown)?;
                let mut out = Vec::new();
                let saved = std::mem::replace(&mut self.shown, shown.clone());
                for item in doc.as_ref().map(Node::items).unwrap_or_default() {
                    let t = self.inline_test(item, &Map::new(), &[], &shown)?;
                    out.push(FileTest::from_test(t, &shown, item.line));
                }
                self.shown = saved;
                Ok(out)
            }
            _ => {
                self.skip_here(line, format!("tests `{r}`"), "tests from this kind of file (a script, a spreadsheet, a glob) are not read: export them to CSV, YAML or JSON");
                Ok(Vec::new())
            }
        }
    }

    fn csv_tests(&mut self, text: &str, shown: &str) -> Result<Vec<FileTest>> {
        let rows = csv(text).map_err(|(line, why)| {
            Error::Config(format!(
                "{shown}:{line}: not valid CSV: {why}; fix the file"
            ))
        })?;
        let mut rows = rows.into_iter();
        let Some((_, header)) = rows.next() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (line, row) in rows {
            if row.iter().all(|c| c.is_empty()) {
                continue;
            }
            let mut t = FileTest::default();
            for (i, col) in header.iter().enumerate() {
                let cell = row.get(i).cloned().unwrap_or_default();
                let col = col.trim();
                if col.starts_with("__expected") {
                    if !cell.trim().is_empty() {
                        t.asserts.push(from_string(&cell, shown, line));
                    }
                } else if col == "__description" {
                    t.description = Some(cell);
                } else if let Some(key) = col.strip_prefix("__metadata:") {
                    if let Some(key) = key.strip_suffix("[]") {
                        let items: Vec<J> =
                            split_escaped(&cell).into_iter().map(J::String).collect();
                        t.metadata.insert(key.to_string(), J::Array(items));
                    } else {
                        t.metadata.insert(key.to_string(), J::String(cell));
                    }
                } else if col.starts_with("__") {
                    self.skip(
                        shown,
                        line,
                        format!("column `{col}`"),
                        "no equivalent in an evals case",
                    );
                } else {
                    t.vars.insert(col.to_string(), J::String(cell));
                }
            }
            out.push(t);
        }
        Ok(out)
    }

    /// A translated test from its vars and assertions.
    fn test_from(
        &mut self,
        description: Option<String>,
        vars: Map<String, J>,
        asserts: Vec<Assertion>,
    ) -> Test {
        let mut t = Test {
            description,
            vars,
            ..Test::default()
        };
        for a in asserts {
            self.assertion(&mut t, a);
        }
        t
    }

    fn assertion(&mut self, t: &mut Test, a: Assertion) {
        let what = format!("assert type `{}`", a.kind);
        if !a.extra.is_empty() {
            self.skip(
                &a.file,
                a.line,
                format!("{what}: {}", a.extra.join(", ")),
                "assertion options other than value and threshold are not carried over (every assertion weighs the same in evals)",
            );
        }
        // promptfoo renders an assertion's text value with the test's vars.
        let value = match &a.value {
            Some(J::String(s)) => match render(s, &t.vars) {
                Ok(s) => Some(J::String(s)),
                Err(e) => {
                    self.skip(
                        &a.file,
                        a.line,
                        what,
                        format!("its value is a template that did not render ({e})"),
                    );
                    return;
                }
            },
            v => v.clone(),
        };
        let text = value.as_ref().and_then(J::as_str).map(str::to_string);
        let strings: Option<Vec<String>> = match &value {
            Some(J::String(s)) => Some(vec![s.clone()]),
            Some(J::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(str::to_string))
                .collect(),
            _ => None,
        };
        let need = |this: &mut Self, ok: bool| {
            if !ok {
                this.skip(
                    &a.file,
                    a.line,
                    format!("assert type `{}`", a.kind),
                    "its value is missing or not the text it needs",
                );
            }
            ok
        };
        let push = |t: &mut Test, key: &str, items: Vec<String>| {
            let list = t
                .expect
                .entry(key.to_string())
                .or_insert_with(|| J::Array(Vec::new()));
            if let J::Array(l) = list {
                l.extend(items.into_iter().map(J::String));
            }
        };
        match a.kind.as_str() {
            // A test read from a YAML/JSON tests file, already translated.
            k if k.starts_with("__expect:") => {
                let key = &k["__expect:".len()..];
                match (t.expect.get_mut(key), a.value) {
                    (Some(J::Array(have)), Some(J::Array(more))) => have.extend(more),
                    (_, Some(v)) => {
                        t.expect.insert(key.to_string(), v);
                    }
                    _ => {}
                }
            }
            "__code" => t.code.extend(a.value),
            "equals" => {
                let Some(v) = value else { need(self, false); return };
                if t.expect.contains_key("equals") {
                    self.skip(&a.file, a.line, what, "a second `equals` on one test: evals' expect holds one");
                } else {
                    t.expect.insert("equals".into(), v);
                }
            }
            "contains" | "contains-all" => {
                if need(self, strings.is_some()) {
                    push(t, "contains", strings.unwrap_or_default());
                }
            }
            "not-contains" | "not-contains-any" => {
                if need(self, strings.is_some()) {
                    push(t, "not_contains", strings.unwrap_or_default());
                }
            }
            "icontains" | "icontains-all" => {
                if need(self, strings.is_some()) {
                    let r = strings.unwrap_or_default().iter().map(|s| format!("(?i){}", regex::escape(s))).collect();
                    push(t, "regex", r);
                }
            }
            "contains-any" | "icontains-any" => {
                if need(self, strings.is_some()) {
                    let alt: Vec<String> = strings.unwrap_or_default().iter().map(|s| regex::escape(s)).collect();
                    let flag = if a.kind.starts_with('i') { "(?i)" } else { "" };
                    push(t, "regex", vec![format!("{flag}(?:{})", alt.join("|"))]);
                }
            }
            "starts-with" => {
                if need(self, text.is_some()) {
                    push(t, "regex", vec![format!("^{}", regex::escape(&text.unwrap_or_default()))]);
                }
            }
            "regex" => {
                if need(self, text.is_some()) {
                    let r = text.unwrap_or_default();
                    match regex::Regex::new(&r) {
                        Ok(_) => push(t, "regex", vec![r]),
                        Err(e) => self.skip(&a.file, a.line, what, format!("a JavaScript pattern Rust's regex does not read ({e})")),
                    }
                }
            }
            "is-json" => match value {
                None => {
                    t.expect.insert("json_valid".into(), J::Bool(true));
                }
                Some(schema @ J::Object(_)) => {
                    t.expect.insert("json_valid".into(), J::Bool(true));
                    t.expect.insert("json_schema".into(), schema);
                }
                Some(_) => self.skip(&a.file, a.line, what, "a schema given as a file or text: inline it as a mapping"),
            },
            "javascript" | "python" | "not-javascript" | "not-python" | "contains-json" | "not-contains-json" => {
                if let Some(J::String(s)) = &value
                    && s.starts_with("file://")
                {
                    self.skip(&a.file, a.line, what, "code in a file: copy the function into the assertion's value");
                    return;
                }
                if a.kind.contains("contains-json") && value.is_some() {
                    self.skip(&a.file, a.line, what, "a JSON schema on contains-json is not checked by the imported scorer");
                    return;
                }
                if !a.kind.contains("json") && text.is_none() {
                    need(self, false);
                    return;
                }
                let mut c = Map::new();
                c.insert("type".into(), J::String(a.kind.clone()));
                if let Some(v) = text {
                    c.insert("value".into(), J::String(v));
                }
                if let Some(th) = a.threshold {
                    c.insert("threshold".into(), json!(th));
                }
                c.insert("line".into(), json!(a.line));
                t.code.push(J::Object(c));
            }
            "llm-rubric" => {
                if !need(self, text.is_some()) {
                    return;
                }
                if t.rubric.is_some() {
                    self.skip(&a.file, a.line, what, "a second llm-rubric on one test: write both rubrics as one");
                    return;
                }
                t.rubric = Some((text.unwrap_or_default(), a.threshold.unwrap_or(0.5)));
            }
            "cost" | "latency" => self.skip(
                &a.file,
                a.line,
                format!("{what} (threshold {})", a.threshold.map(|t| t.to_string()).unwrap_or_default()),
                "evals has no per-case limit on cost or latency: gate them with --max-cost-increase / --max-latency-increase, or weigh them in weighted_score",
            ),
            _ => self.skip(&a.file, a.line, what, "no equivalent assertion in evals"),
        }
    }
}

/// A test read from a file: its assertions keep their own file and line.
#[derive(Default)]
struct FileTest {
    description: Option<String>,
    vars: Map<String, J>,
    asserts: Vec<Assertion>,
    metadata: Map<String, J>,
}

impl FileTest {
    /// An already translated test from a YAML/JSON file, carried as its translation.
    fn from_test(t: Test, file: &str, line: usize) -> FileTest {
        let mut f = FileTest {
            description: t.description,
            vars: t.vars,
            metadata: t.metadata,
            ..FileTest::default()
        };
        // Re-express the translation as assertions again, so defaultTest's go first.
        for (k, v) in t.expect {
            f.asserts.push(Assertion {
                kind: format!("__expect:{k}"),
                value: Some(v),
                threshold: None,
                file: file.into(),
                line,
                extra: Vec::new(),
            });
        }
        for c in t.code {
            f.asserts.push(Assertion {
                kind: "__code".into(),
                value: Some(c),
                threshold: None,
                file: file.into(),
                line,
                extra: Vec::new(),
            });
        }
        if let Some((r, th)) = t.rubric {
            f.asserts.push(Assertion {
                kind: "llm-rubric".into(),
                value: Some(J::String(r)),
                threshold: Some(th),
                file: file.into(),
                line,
                extra: Vec::new(),
            });
        }
        f
    }
}

fn clone_asserts(a: &[Assertion]) -> Vec<Assertion> {
    a.iter()
        .map(|a| Assertion {
            kind: a.kind.clone(),
            value: a.value.clone(),
            threshold: a.threshold,
            file: a.file.clone(),
            line: a.line,
            extra: a.extra.clone(),
        })
        .collect()
}

fn merge(under: &Map<String, J>, over: &Map<String, J>) -> Map<String, J> {
    let mut m = under.clone();
    m.extend(over.clone());
    m
}

fn scalar(text: &str, line: usize) -> Node {
    Node {
        line,
        value: Value::Scalar {
            text: text.into(),
            plain: true,
        },
    }
}

/// A referenced file's error names the config that referenced it too.
fn referenced(e: Error, config: &str) -> Error {
    match e {
        Error::Config(m) => Error::Config(format!("{m} (referenced by {config})")),
        other => other,
    }
}

/// The section a promptfoo provider id maps to, and the model.
fn native(id: &str) -> Option<(&'static str, String)> {
    let (head, rest) = id.split_once(':')?;
    let strip = |rest: &str, kinds: &[&str]| {
        for k in kinds {
            if let Some(m) = rest.strip_prefix(&format!("{k}:")) {
                return m.to_string();
            }
        }
        rest.to_string()
    };
    let (kind, model) = match head {
        "openai" => {
            if rest.starts_with("completion:")
                || rest.starts_with("embedding")
                || rest.starts_with("assistant:")
                || rest.starts_with("realtime:")
                || rest.starts_with("responses:")
            {
                return None;
            }
            ("openai", strip(rest, &["chat"]))
        }
        "anthropic" => {
            if rest.starts_with("completion:") {
                return None;
            }
            ("anthropic", strip(rest, &["messages"]))
        }
        "google" | "vertex" => ("gemini", strip(rest, &["chat"])),
        _ => return None,
    };
    (!model.is_empty()).then_some((kind, model))
}

fn is_native_section(name: &str) -> bool {
    matches!(
        name,
        "openai" | "anthropic" | "gemini" | "openrouter" | "fake" | "mock" | "typesafe"
    )
}

/// A `.txt` prompt file's prompts: separated by lines of `---`.
fn split_prompts(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        if line.trim_end() == "---" {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push_str(line);
            cur.push('\n');
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The user template: the one prompt, or each prompt under its dataset.
fn user_template(prompts: &[Prompt]) -> String {
    if let [one] = prompts {
        return format!("{}\n", one.text);
    }
    let mut t = String::new();
    for (i, p) in prompts.iter().enumerate() {
        let kw = if i == 0 { "if" } else { "elif" };
        t.push_str(&format!(
            "{{% {kw} case.dataset == {} %}}{}",
            q(&p.dataset),
            p.text
        ));
    }
    t.push_str("{% endif %}\n");
    t
}

/// A string as a YAML (and JSON) double-quoted scalar.
fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Lowercase letters, digits and dashes.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    out.chars()
        .take(60)
        .collect::<String>()
        .trim_end_matches('-')
        .to_string()
}

/// An assertion's value rendered with the test's vars, as promptfoo does (Nunjucks).
fn render(text: &str, vars: &Map<String, J>) -> std::result::Result<String, String> {
    if !text.contains("{{") && !text.contains("{%") {
        return Ok(text.to_string());
    }
    let mut env = minijinja::Environment::new();
    env.set_keep_trailing_newline(true);
    env.render_str(text, J::Object(vars.clone()))
        .map_err(|e| e.to_string())
}

/// promptfoo's `assertionFromString`: a CSV `__expected` cell as an assertion.
fn from_string(cell: &str, file: &str, line: usize) -> Assertion {
    let mk = |kind: &str, value: Option<J>, threshold: Option<f64>| Assertion {
        kind: kind.to_string(),
        value,
        threshold,
        file: file.to_string(),
        line,
        extra: Vec::new(),
    };
    for (prefix, kind) in [
        ("javascript:", "javascript"),
        ("fn:", "javascript"),
        ("eval:", "javascript"),
        ("python:", "python"),
    ] {
        if let Some(rest) = cell.strip_prefix(prefix) {
            return mk(kind, Some(J::String(rest.trim().to_string())), None);
        }
    }
    for prefix in ["grade:", "llm-rubric:"] {
        if let Some(rest) = cell.strip_prefix(prefix) {
            return mk("llm-rubric", Some(J::String(rest.to_string())), None);
        }
    }
    // `(not-)?type(threshold)?(:value)?`
    static TYPES: &[&str] = &[
        "equals",
        "contains-any",
        "contains-all",
        "icontains-any",
        "icontains-all",
        "contains-json",
        "is-json",
        "regex",
        "icontains",
        "contains",
        "starts-with",
        "similar",
        "levenshtein",
        "rouge-n",
        "webhook",
        "answer-relevance",
        "context-faithfulness",
        "factuality",
        "model-graded-closedqa",
        "cost",
        "latency",
        "perplexity",
        "is-valid-openai-function-call",
        "is-valid-openai-tools-call",
        "is-sql",
        "is-xml",
        "contains-xml",
        "contains-sql",
        "g-eval",
        "moderation",
        "classifier",
        "bleu",
        "meteor",
        "word-count",
    ];
    let re = regex::Regex::new(&format!(
        r"^(not-)?({})(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$",
        TYPES
            .iter()
            .map(|t| regex::escape(t))
            .collect::<Vec<_>>()
            .join("|")
    ))
    .expect("a fixed pattern");
    if let Some(m) = re.captures(cell) {
        let kind = format!("{}{}", m.get(1).map_or("", |x| x.as_str()), &m[2]);
        let threshold = m.get(3).and_then(|t| t.as_str().parse().ok());
        let value = m.get(4).map(|v| v.as_str());
        let value = match &m[2] {
            "contains-any" | "contains-all" | "icontains-any" | "icontains-all" => value.map(|v| {
                J::Array(
                    v.split(',')
                        .map(|s| J::String(s.trim().to_string()))
                        .collect(),
                )
            }),
            _ => value.map(|v| J::String(v.trim().to_string())),
        };
        return mk(&kind, value, threshold);
    }
    mk("equals", Some(J::String(cell.to_string())), None)
}

/// A CSV cell list split on commas, `\,` kept as a comma.
fn split_escaped(cell: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = cell.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&',') => {
                cur.push(',');
                chars.next();
            }
            ',' => out.push(std::mem::take(&mut cur).trim().to_string()),
            c => cur.push(c),
        }
    }
    out.push(cur.trim().to_string());
    out.into_iter().filter(|s| !s.is_empty()).collect()
}

/// RFC 4180 CSV: rows with the 1-based line each starts on.
/// CSV rows, each with the line it starts on.
type Rows = Vec<(usize, Vec<String>)>;

fn csv(text: &str) -> std::result::Result<Rows, (usize, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cell = String::new();
    let mut line = 1;
    let mut start = 1;
    let mut quoted = false;
    let mut quote_line = 0;
    let mut chars = text.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    cell.push('"');
                    chars.next();
                }
                '"' => quoted = false,
                '\n' => {
                    line += 1;
                    cell.push('\n');
                }
                c => cell.push(c),
            }
            continue;
        }
        match c {
            '"' if cell.is_empty() => {
                quoted = true;
                quote_line = line;
            }
            ',' => row.push(std::mem::take(&mut cell)),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                row.push(std::mem::take(&mut cell));
                rows.push((start, std::mem::take(&mut row)));
                line += 1;
                start = line;
                any = false;
            }
            c => cell.push(c),
        }
    }
    if quoted {
        return Err((quote_line, "a quoted cell is never closed".into()));
    }
    if any {
        row.push(cell);
        rows.push((start, row));
    }
    Ok(rows)
}

/// The judge's rubric: promptfoo's llm-rubric, on a 0..1 scale.
const RUBRIC: &str = "{% if metadata.llm_rubric %}You are grading output according to a user-specified rubric. If the statement in the rubric is true, the output passes the test.\n\n<Output>\n{{ output }}\n</Output>\n<Rubric>\n{{ metadata.llm_rubric }}\n</Rubric>\n\nScore 1 when the output meets the rubric, 0 when it does not, or in between for a partial match.\n{% endif %}";

/// The exec scorer for promptfoo's code assertions (`javascript` through node, `python`
/// in process, `contains-json`), by promptfoo's rules: a boolean passes or fails; a number
/// is the score, passing above 0 (or at the assertion's threshold); an object is a grading
/// result `{pass, score, reason}`.
const SCRIPT: &str = include_str!("promptfoo_asserts.py");

/// The exec adapter's worker for an `exec:` or `python:` provider: the prompt rendered
/// with the case's vars, then the script run as promptfoo runs it.
const PROVIDER_SCRIPT: &str = include_str!("promptfoo_provider.py");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_ids_map_to_their_native_sections() {
        assert_eq!(
            native("openai:gpt-4.1-mini"),
            Some(("openai", "gpt-4.1-mini".into()))
        );
        assert_eq!(
            native("openai:chat:gpt-5.2"),
            Some(("openai", "gpt-5.2".into()))
        );
        assert_eq!(
            native("anthropic:messages:claude-sonnet-4"),
            Some(("anthropic", "claude-sonnet-4".into()))
        );
        assert_eq!(
            native("vertex:gemini-2.5-pro"),
            Some(("gemini", "gemini-2.5-pro".into()))
        );
        assert_eq!(native("openai:completion:davinci"), None);
        assert_eq!(native("exec: python run.py"), None);
        assert_eq!(native("bedrock:x"), None);
    }

    #[test]
    fn csv_cells_keep_quotes_commas_and_newlines_and_rows_their_lines() {
        let rows = csv("a,b\n\"x, \"\"y\"\"\",\"two\nlines\"\nlast,row").unwrap();
        assert_eq!(
            rows,
            vec![
                (1, vec!["a".to_string(), "b".into()]),
                (2, vec!["x, \"y\"".to_string(), "two\nlines".into()]),
                (4, vec!["last".to_string(), "row".into()]),
            ]
        );
        assert_eq!(csv("a\n\"open\n").unwrap_err().0, 2);
        assert_eq!(split_escaped("a, b\\,c ,"), ["a", "b,c"]);
    }

    #[test]
    fn expected_cells_read_as_promptfoo_reads_them() {
        let a = from_string("contains: algorithm", "t.csv", 2);
        assert_eq!(
            (a.kind.as_str(), a.value),
            ("contains", Some(json!("algorithm")))
        );
        let a = from_string("llm-rubric: is kind", "t.csv", 2);
        assert_eq!(
            (a.kind.as_str(), a.value),
            ("llm-rubric", Some(json!(" is kind")))
        );
        let a = from_string("not-icontains-any:a, b", "t.csv", 2);
        assert_eq!(a.kind, "not-icontains-any");
        assert_eq!(a.value, Some(json!(["a", "b"])));
        let a = from_string("similar(0.9):hello", "t.csv", 2);
        assert_eq!((a.kind.as_str(), a.threshold), ("similar", Some(0.9)));
        let a = from_string("fn:output.length > 3", "t.csv", 2);
        assert_eq!(a.kind, "javascript");
        let a = from_string("Paris", "t.csv", 2);
        assert_eq!((a.kind.as_str(), a.value), ("equals", Some(json!("Paris"))));
    }

    #[test]
    fn a_txt_prompt_file_splits_on_dash_lines_and_prompts_choose_by_dataset() {
        assert_eq!(split_prompts("one {{a}}\n---\ntwo\n"), ["one {{a}}", "two"]);
        let t = user_template(&[
            Prompt {
                dataset: "prompt-1".into(),
                text: "one".into(),
            },
            Prompt {
                dataset: "prompt-2".into(),
                text: "two".into(),
            },
        ]);
        assert_eq!(
            t,
            "{% if case.dataset == \"prompt-1\" %}one{% elif case.dataset == \"prompt-2\" %}two{% endif %}\n"
        );
        assert_eq!(slug("Check for exact match!"), "check-for-exact-match");
    }
}
