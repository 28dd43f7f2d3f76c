//! A broken config or case file is exit 2 with one line naming the file, the place and the fix.

use crate::harness::{MINI_CASES, Project, TOY_FOUND, mini_config};

/// A project whose config is the mini suite followed by `extra`.
fn with_config(extra: &str) -> Project {
    crate::harness::mini_with("bad", extra)
}

/// The error a broken suite gives, without the `suite:` line that names the suite first
/// (printed once the config is read, before the cases load).
fn error_of(p: &Project) -> String {
    let d = p.evals(&["cases"]).code(2);
    assert_eq!(d.stdout, "", "a config error prints nothing on stdout");
    match d.stderr.strip_prefix("suite: ") {
        Some(rest) => rest
            .split_once('\n')
            .map(|(_, e)| e.to_string())
            .unwrap_or_default(),
        None => d.stderr,
    }
}

#[test]
fn misspelt_key_in_defaults_names_line_column_and_fix() {
    // mini_config is 9 lines; defaults: is line 10, temprature line 12.
    let p = with_config("defaults:\n  effort: low\n  temprature: 0.1\n");
    assert_eq!(
        error_of(&p),
        "error: evals/.llm-evals.config.yml:12:3: unknown key 'temprature' in defaults (did you mean 'temperature'?)\n"
    );
}

#[test]
fn a_scalar_typo_at_the_top_level_gets_the_did_you_mean_of_a_nested_one() {
    // Misspelt and misplaced: it is `defaults.temperature`.
    let p = with_config("temprature: 0.1\n");
    assert_eq!(
        error_of(&p),
        "error: evals/.llm-evals.config.yml:10:1: unknown key 'temprature' (did you mean 'temperature'? a key of defaults: write it under defaults: (`defaults: { temperature: ... }`))\n"
    );
    // Spelt right, in the wrong place.
    let p = with_config("max_tokens: 512\n");
    assert_eq!(
        error_of(&p),
        "error: evals/.llm-evals.config.yml:10:1: unknown key 'max_tokens' ('max_tokens' is a key of defaults: write it under defaults: (`defaults: { max_tokens: ... }`))\n"
    );
    // A list or a scalar is no provider section: named as the unknown key it is.
    let p = with_config("nonsense: [1, 2]\n");
    let e = error_of(&p);
    assert!(
        e.starts_with("error: evals/.llm-evals.config.yml:10:1: unknown key 'nonsense' (a custom provider section needs base_url"),
        "{e}"
    );
    // A provider's name given a value that is no section.
    let p = with_config("openai: 3\n");
    assert_eq!(
        error_of(&p),
        "error: evals/.llm-evals.config.yml:10:1: openai: a provider section is a mapping (`openai: { models: [...] }`); write its keys under it\n"
    );
}

#[test]
fn misspelt_top_level_setting_suggests_the_setting() {
    let p = with_config("defualts:\n  effort: low\n");
    assert_eq!(
        error_of(&p),
        "error: evals/.llm-evals.config.yml:10:1: unknown key 'defualts' (did you mean 'defaults'?)\n"
    );
}

#[test]
fn unknown_top_level_section_without_base_url_is_an_error() {
    let p = with_config("mystery:\n  models: [m]\n");
    assert_eq!(
        error_of(&p),
        "error: evals/.llm-evals.config.yml:10:1: unknown key 'mystery' (a custom provider section needs base_url, or kind: naming a provider registered from Rust; known keys: settings like defaults, scorer, adapter, and providers openrouter, openai, fake, mock, typesafe, anthropic, gemini)\n"
    );
}

#[test]
fn a_section_whose_kind_no_provider_has_stops_the_run_naming_the_registered_ones() {
    let p = with_config("mine:\n  kind: opnai\n  models: [m]\n");
    let d = p.evals(&["run", "--no-autosave"]).code(2);
    assert_eq!(d.stdout, "");
    d.stderr_has(
        "error: evals/.llm-evals.config.yml: provider section 'mine': no provider is registered as 'opnai' (did you mean 'openai'?); the registered ones are anthropic, custom, fake, gemini, mock, openai, openai-responses, openrouter, typesafe: fix its kind, or register the provider (llm_evals::provider::Registry::register) in the RunOptions of the run\n",
    );
}

#[test]
fn broken_yaml_names_file_line_and_column() {
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "suite: x\nrequest_types: [prompt]\nfake:\n  models: [echo]\n   bad: indent\n",
        )
        .file("evals/datasets/d/cases.jsonl", MINI_CASES);
    let e = error_of(&p);
    assert!(
        e.starts_with("error: evals/.llm-evals.config.yml:5:"),
        "{e}"
    );
}

#[test]
fn an_unclosed_bracket_names_where_it_was_opened() {
    for (text, want) in [
        // Closed nowhere: the parser gives up on the next line, at `fake:`.
        (
            "suite: x\nrequest_types: [prompt\nfake: {models: [echo]}\n",
            "error: evals/.llm-evals.config.yml:2:16: this '[' is not closed: add the ']' that ends it (the YAML parser gave up at line 3, column 5)\n",
        ),
        (
            "suite: x\nrequest_types: [prompt]\nfake: {models: [echo]\nscorer: { kind: assertions }\n",
            "error: evals/.llm-evals.config.yml:3:7: this '{' is not closed: add the '}' that ends it (the YAML parser gave up at line 4, column 1)\n",
        ),
        // At the end of the file.
        (
            "suite: x\nrequest_types: [prompt]\nfake:\n  models: [echo, \n",
            "error: evals/.llm-evals.config.yml:4:11: this '[' is not closed: add the ']' that ends it\n",
        ),
        // Closed by the wrong bracket.
        (
            "suite: x\nrequest_types: [prompt]\nfake: {models: [echo}\n",
            "error: evals/.llm-evals.config.yml:3:16: this '[' is not closed: add the ']' that ends it\n",
        ),
    ] {
        let p = Project::new()
            .file("evals/.llm-evals.config.yml", text)
            .file("evals/datasets/d/cases.jsonl", MINI_CASES);
        let e = error_of(&p);
        assert_eq!(e, want, "{text:?}");
    }
    // A bracket that is closed, around another mistake, is not blamed.
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "suite: x\nrequest_types: [\n  prompt,\n  \"a\" \"b\",\n]\n",
        )
        .file("evals/datasets/d/cases.jsonl", MINI_CASES);
    let e = error_of(&p);
    assert!(
        e.starts_with("error: evals/.llm-evals.config.yml:4:") && !e.contains("not closed"),
        "{e}"
    );
}

#[test]
fn an_alias_bomb_says_the_yaml_expands_past_the_node_limit() {
    // Nine levels of ten aliases each: a billion nodes from a dozen lines.
    let mut bomb =
        String::from("version:\n  - &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..9 {
        let refs = vec![format!("*l{}", i - 1); 10].join(", ");
        bomb.push_str(&format!("  - &l{i} [{refs}]\n"));
    }
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &mini_config("bomb").replace("suite: bomb\n", &format!("suite: bomb\n{bomb}")),
        )
        .file("evals/datasets/d/cases.jsonl", MINI_CASES);
    let e = error_of(&p);
    assert_eq!(
        e,
        "error: evals/.llm-evals.config.yml:7:25: the YAML expands past 50000 nodes (aliases that repeat each other?): write the values out, or use fewer `*aliases`\n"
    );
    assert!(!e.contains("budget breached"), "{e}");
}

#[test]
fn request_types_missing_empty_or_unknown_name_the_file() {
    let base = mini_config("rt");
    for (text, want) in [
        (
            base.replace("request_types: [prompt]\n", ""),
            "error: evals/.llm-evals.config.yml: missing key 'request_types': add `request_types: [prompt]` (what the suite's adapter sends; one of prompt, typesafe)\n",
        ),
        (
            base.replace("[prompt]", "[]"),
            "error: evals/.llm-evals.config.yml: 'request_types' is empty: list what the suite's adapter sends, e.g. `request_types: [prompt]`\n",
        ),
        (
            base.replace("[prompt]", "[promt]"),
            "error: evals/.llm-evals.config.yml: unknown request type 'promt' in request_types (did you mean 'prompt'?)\n",
        ),
    ] {
        let p = Project::new()
            .file("evals/.llm-evals.config.yml", &text)
            .file("evals/datasets/d/cases.jsonl", MINI_CASES);
        assert_eq!(error_of(&p), want);
    }
}

#[test]
fn bad_effort_value_is_rejected_with_the_list() {
    let p = with_config("defaults: { effort: hihg }\n");
    assert_eq!(
        error_of(&p),
        "error: evals/.llm-evals.config.yml:10:21: unknown effort 'hihg' (did you mean 'high'?)\n"
    );
}

#[test]
fn jsonl_duplicate_ids_name_both_lines() {
    let p = with_config("").file(
        "evals/datasets/d/cases.jsonl",
        &format!("{MINI_CASES}{{\"id\": \"two\", \"input\": \"b\"}}\n{{\"id\": \"one\", \"input\": \"c\"}}\n"),
    );
    assert_eq!(
        error_of(&p),
        "error: duplicate case id 'one' in dataset 'd': evals/datasets/d/cases.jsonl:1 and evals/datasets/d/cases.jsonl:3; give one of them another id\n"
    );
}

#[test]
fn jsonl_unknown_key_names_the_line_and_suggests() {
    let p = with_config("").file(
        "evals/datasets/d/cases.jsonl",
        &format!("{MINI_CASES}{{\"id\": \"two\", \"inptu\": \"b\"}}\n"),
    );
    assert_eq!(
        error_of(&p),
        "error: evals/datasets/d/cases.jsonl:2: unknown key 'inptu' (did you mean 'input'?)\n"
    );
}

#[test]
fn jsonl_line_that_is_not_json_names_the_line() {
    let p = with_config("").file(
        "evals/datasets/d/cases.jsonl",
        &format!("{MINI_CASES}{{\"id\": \"two\", \n"),
    );
    let e = error_of(&p);
    assert!(
        e.starts_with("error: evals/datasets/d/cases.jsonl:2"),
        "{e}"
    );
}

#[test]
fn a_rate_limit_on_both_entries_of_one_model_is_refused() {
    let p = Project::new().file(
        "evals/.llm-evals.config.yml",
        "request_types: [prompt]\nscorer: { kind: assertions }\nopenrouter:\n  vendors:\n    openai:\n      models:\n        - model: gpt-4o-mini\n          rate_limit: { burst: 1, per_minute: 10 }\n        - model: gpt-4o-mini\n          effort: low\n          rate_limit: { burst: 1, per_minute: 10 }\n",
    );
    p.evals(&["compare", "-n"]).exact().code(2).stderr_is(
        "error: evals/.llm-evals.config.yml: openai/gpt-4o-mini is listed twice with a rate_limit on both entries; a model shares one limit, so set it on one entry only\n",
    );
}

#[test]
fn settings_that_cannot_work_are_refused_when_the_config_loads() {
    for (extra, message) in [
        (
            "defaults: { parallelism: 0 }\n",
            "error: evals/.llm-evals.config.yml: defaults.parallelism is 0: give at least 1 case in flight per experiment\n",
        ),
        (
            "cassettes: { redact: [\"(acct\"] }\n",
            "error: evals/.llm-evals.config.yml: cassettes.redact: bad pattern '(acct': error: unclosed group\n",
        ),
    ] {
        let p = Project::new()
            .file(
                "evals/.llm-evals.config.yml",
                &format!("request_types: [prompt]\nscorer: {{ kind: assertions }}\nfake: {{ models: [echo] }}\n{extra}"),
            )
            .file("evals/datasets/d/cases.jsonl", "{\"id\": \"a\", \"input\": \"x\", \"expect\": {\"min_chars\": 1}}\n");
        p.evals(&["verify"]).exact().code(2).stderr_is(message);
    }
}

#[test]
fn a_made_up_fake_model_or_a_negative_weight_is_refused() {
    let p = Project::toy();
    p.evals(&["run", "-m", "fake/nosuch", "--no-autosave"])
        .exact()
        .code(2)
        .stderr_is(&format!(
            "{TOY_FOUND}error: fake/nosuch: the fake provider has the models echo, parrot and oracle; there is no 'nosuch'\n"
        ));
    let q = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "request_types: [prompt]\nscorer: { kind: assertions }\nfake: { models: [echo] }\n",
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"a\", \"input\": \"x\", \"weight\": -1, \"expect\": {\"min_chars\": 1}}\n",
        );
    q.evals(&["cases"]).exact().code(2).stderr_is(&format!(
        "{}error: evals/datasets/d/cases.jsonl:1: weight -1 must be a positive number (it scales the case in the means; leave it out for 1)\n",
        q.found()
    ));
}

#[test]
fn schema_typos_duplicate_keys_and_flow_style_name_the_key_and_the_fix() {
    for (config, message) in [
        (
            "scorer:\n  kind: fields\n  schema:\n    count: integr\n",
            "error: evals/.llm-evals.config.yml:4:3: unknown value 'integr' (did you mean 'integer'?)\n",
        ),
        (
            "scorer:\n  kind: fields\n  schema:\n    color: { type: enum, valeus: [red, blue] }\n",
            "error: evals/.llm-evals.config.yml:4:3: unknown key 'valeus' in scorer (did you mean 'values'?)\n",
        ),
        (
            "scorer: { kind: assertions }\nlocal: { base_url: http://x/v1, models: [a] }\nlocal: { base_url: http://y/v1, models: [b] }\n",
            "error: evals/.llm-evals.config.yml:4:1: key 'local' appears twice; merge the two into one\n",
        ),
        (
            "scorer: { kind: assertions }\ndefaults: { temprature: 0.1 }\n",
            "error: evals/.llm-evals.config.yml:3:13: unknown key 'temprature' in defaults (did you mean 'temperature'?)\n",
        ),
    ] {
        let p = Project::new()
            .file(
                "evals/.llm-evals.config.yml",
                &format!("request_types: [prompt]\n{config}"),
            )
            .file(
                "evals/datasets/d/cases.jsonl",
                "{\"id\": \"a\", \"input\": \"x\"}\n",
            );
        let d = p.evals(&["cases"]).exact().code(2);
        d.stderr_is(message);
        d.stderr_lacks("did not match any variant");
        d.stderr_lacks("DuplicateKeyPolicy");
    }
}

#[test]
fn an_unknown_key_in_the_adapter_names_the_section() {
    let p = Project::new().file(
        "evals/.llm-evals.config.yml",
        "request_types: [prompt]\nscorer: { kind: assertions }\nadapter:\n  kind: prompt\n  sytem: hi\n",
    );
    p.evals(&["cases"]).exact().code(2).stderr_is(
        "error: evals/.llm-evals.config.yml:5:3: unknown key 'sytem' in adapter (did you mean 'system'?)\n",
    );
}

/// Writes raw bytes (not UTF-8) to `rel` in the project.
fn write_bytes(p: &Project, rel: &str, bytes: &[u8]) {
    let path = p.path().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// `prefix` then a Latin-1 `é` (0xE9, not UTF-8) then `rest`, with the line of the bad
/// byte, its 1-based byte in that line and its offset in the file.
fn latin1(prefix: &str, rest: &str) -> (Vec<u8>, usize, usize, usize) {
    let mut bytes = prefix.as_bytes().to_vec();
    let offset = bytes.len();
    bytes.push(0xE9);
    bytes.extend_from_slice(rest.as_bytes());
    let line = prefix.matches('\n').count() + 1;
    let byte = offset - prefix.rfind('\n').map_or(0, |i| i + 1) + 1;
    (bytes, line, byte, offset)
}

#[test]
fn a_config_that_is_not_utf8_names_the_line_and_offset_and_exits_2() {
    let (bytes, line, byte, offset) = latin1(&mini_config("latin"), "# caf\nend: x\n");
    let p = Project::new().file("evals/datasets/d/cases.jsonl", MINI_CASES);
    write_bytes(&p, "evals/.llm-evals.config.yml", &bytes);
    assert_eq!(
        error_of(&p),
        format!(
            "error: evals/.llm-evals.config.yml:{line}: not UTF-8 (byte {byte} of the line, offset {offset} in the file): save the file as UTF-8\n"
        )
    );
}

#[test]
fn case_files_and_datasets_that_are_not_utf8_name_the_file_line_and_offset() {
    for (rel, prefix, rest) in [
        (
            "evals/datasets/x/cases/a/input.txt",
            "first line\nsecond\nab",
            "cd\n",
        ),
        (
            "evals/datasets/x/cases/a/expected.json",
            "{\"answer\": \"caf",
            "\"}\n",
        ),
        (
            "evals/datasets/x/cases/a/metadata.json",
            "{\n  \"difficulty\": \"h",
            "\"\n}\n",
        ),
        (
            "evals/datasets/d/cases.jsonl",
            &format!("{MINI_CASES}{{\"id\": \"two\", \"input\": \"caf"),
            "\"}\n",
        ),
    ] {
        let (bytes, line, byte, offset) = latin1(prefix, rest);
        let p = with_config("")
            .file(
                "evals/datasets/x/cases/a/input.txt",
                "say {\"answer\": \"x\"}\n",
            )
            .file(
                "evals/datasets/x/cases/a/expected.json",
                "{\"answer\": \"x\"}\n",
            );
        write_bytes(&p, rel, &bytes);
        assert_eq!(
            error_of(&p),
            format!(
                "error: {rel}:{line}: not UTF-8 (byte {byte} of the line, offset {offset} in the file): save the file as UTF-8\n"
            ),
            "{rel}"
        );
    }
}

#[test]
fn a_schema_file_template_or_env_file_that_is_not_utf8_is_a_config_error() {
    let config = "suite: latin\nrequest_types: [prompt]\nenv_files: [.env]\nadapter: { kind: prompt, system: prompts/system.md, user: \"{{ input }}\", json: true }\nscorer: { kind: fields, schema: schema.yml }\nfake:\n  models: [echo]\n";
    for rel in ["evals/schema.yml", "evals/prompts/system.md", "evals/.env"] {
        let p = Project::new()
            .file("evals/.llm-evals.config.yml", config)
            .file("evals/datasets/d/cases.jsonl", MINI_CASES)
            .file("evals/schema.yml", "answer: string\n")
            .file("evals/prompts/system.md", "Answer in JSON.\n")
            .file("evals/.env", "A=1\n");
        let (bytes, line, byte, offset) = latin1("# caf", "\nB=2\n");
        write_bytes(&p, rel, &bytes);
        // The schema is read with the config, before the suite is named; the others after.
        let found = if rel == "evals/schema.yml" {
            ""
        } else {
            "suite: latin (evals/.llm-evals.config.yml)\n"
        };
        p.evals(&["run", "--no-autosave", "--history", "h.sqlite3"])
            .exact()
            .code(2)
            .stderr_is(&format!(
                "{found}error: {rel}:{line}: not UTF-8 (byte {byte} of the line, offset {offset} in the file): save the file as UTF-8\n"
            ));
    }
}

#[test]
fn a_utf16_case_file_says_it_is_utf16() {
    // What Windows editors save as "Unicode": a byte-order mark, then two bytes a letter.
    let mut bytes = vec![0xFF, 0xFE];
    bytes.extend(
        "say {\"answer\": \"x\"}\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes),
    );
    let p = with_config("");
    write_bytes(&p, "evals/datasets/x/cases/a/input.txt", &bytes);
    assert_eq!(
        error_of(&p),
        "error: evals/datasets/x/cases/a/input.txt: the file is UTF-16, not UTF-8: save it as UTF-8\n"
    );
}
