//! YAML reads an unquoted `yes`, `no`, `on`, `off`, `y` or `n` as a boolean: an enum value or a
//! field name written so is named, with the key and the quoted fix, never "invalid type:
//! boolean" at `schema:`.

use crate::harness::{MINI_CASES, Project};

fn error_with_schema(schema: &str) -> String {
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!("suite: b\nrequest_types: [prompt]\nscorer:\n  kind: fields\n  schema:\n{schema}fake:\n  models: [echo]\n"),
        )
        .file("evals/datasets/d/cases.jsonl", MINI_CASES);
    let d = p.evals(&["compare", "-n"]).code(2);
    d.stderr
}

#[test]
fn unquoted_yes_no_enum_values_name_the_key_and_the_quoted_fix() {
    assert_eq!(
        error_with_schema("    answer: { type: enum, values: [yes, no] }\n"),
        "error: evals/.llm-evals.config.yml:6:36: 'yes' in scorer.schema.answer.values is read by YAML as the boolean true, not as text: quote it: values: [\"yes\", \"no\"]\n"
    );
}

#[test]
fn a_boolean_word_in_a_block_list_of_values_is_named_at_its_line() {
    assert_eq!(
        error_with_schema(
            "    answer:\n      type: multi_enum\n      nullable: yes\n      values:\n        - maybe\n        - off\n"
        ),
        "error: evals/.llm-evals.config.yml:11:11: 'off' in scorer.schema.answer.values is read by YAML as the boolean false, not as text: quote it: - \"off\"\n"
    );
}

#[test]
fn a_field_named_on_says_to_quote_the_name() {
    assert_eq!(
        error_with_schema("    answer: string\n    on: boolean\n"),
        "error: evals/.llm-evals.config.yml:7:5: the field name 'on' in scorer.schema is read by YAML as the boolean true, not as text: quote it: \"on\": boolean\n"
    );
}

#[test]
fn quoted_values_load() {
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "suite: b\nrequest_types: [prompt]\nscorer:\n  kind: fields\n  schema:\n    answer: { type: enum, values: [\"yes\", \"no\"] }\n    \"on\": boolean\nfake:\n  models: [echo]\n",
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"one\", \"input\": \"x\", \"expected\": {\"answer\": \"yes\", \"on\": true}}\n",
        );
    p.evals(&["compare", "-n"]).ok();
}
