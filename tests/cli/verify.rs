//! `evals verify`: offline checks of inputs and expected.json; exit 1 naming the file.

use crate::harness::{Project, TOY_FOUND};

const DOG: &str = "evals/datasets/animals/cases/dog";

fn toy_with_dog(input: &str, expected: &str) -> Project {
    Project::toy()
        .file(&format!("{DOG}/input.txt"), input)
        .file(&format!("{DOG}/expected.json"), expected)
}

#[test]
fn toy_suite_verifies_clean() {
    Project::toy()
        .evals(&["verify"])
        .exact()
        .ok()
        .stderr_is(&format!("{TOY_FOUND}verified 8 cases: no problems\n"));
}

#[test]
fn enum_value_off_the_list_names_the_file_and_field() {
    let d = toy_with_dog(
        "A dog.",
        r#"{"kind": "plant", "name": "dog", "legs": 4, "warm": true}"#,
    )
    .evals(&["verify"])
    .exact()
    .code(1);
    d.stdout_is(&format!(
        "{DOG}/expected.json: kind: \"plant\" is not one of animal, color\n"
    ))
    .stderr_is(&format!("{TOY_FOUND}1 problem in 9 cases\n"));
}

#[test]
fn unparsable_expected_json_names_line_and_column() {
    let d = toy_with_dog("A dog.", "{\"kind\": \"animal\",\n \"name\": }\n")
        .evals(&["verify"])
        .exact()
        .code(1);
    d.stdout_is(&format!(
        "{DOG}/expected.json:2:10: not valid JSON: expected value\n"
    ))
    .stderr_is(&format!("{TOY_FOUND}1 problem in 9 cases\n"));
}

#[test]
fn empty_input_is_a_problem() {
    let d = toy_with_dog(
        "",
        r#"{"kind": "animal", "name": "dog", "legs": 4, "warm": true}"#,
    )
    .evals(&["verify"])
    .exact()
    .code(1);
    d.stdout_is(&format!(
        "{DOG}/input.txt: input is empty; write the text the model should read\n"
    ))
    .stderr_is(&format!("{TOY_FOUND}1 problem in 9 cases\n"));
}

#[test]
fn a_bad_case_outside_the_selection_does_not_fail_verify() {
    toy_with_dog("", "{}")
        .evals(&["verify", "-d", "colors"])
        .exact()
        .ok()
        .stderr_is(&format!("{TOY_FOUND}verified 4 cases: no problems\n"));
}

#[test]
fn an_input_over_a_mebibyte_is_a_warning_naming_the_file_and_its_size() {
    let big = "A dog. ".repeat(200_000); // 1.3 MiB
    let d = toy_with_dog(
        &big,
        r#"{"kind": "animal", "name": "dog", "legs": 4, "warm": true}"#,
    )
    .evals(&["verify"])
    .exact()
    .ok();
    // One warning: the cases under the limit are not named.
    d.stderr_is(&format!(
        "{TOY_FOUND}warning: {DOG}/input.txt: the input is 1.3 MiB, over 1.0 MiB: every call sends it and every result and cassette keeps it; trim it if the case does not need it all\nverified 9 cases: no problems\n"
    ));
}

#[test]
fn a_jsonl_line_over_a_mebibyte_is_a_warning_naming_the_file_and_line() {
    // As an input.txt over the limit: the line that sends 1.5 MiB is named, the small
    // one before it is not.
    let big = "A dog. ".repeat(225_000);
    let expected = r#"{"kind": "animal", "name": "dog", "legs": 4, "warm": true}"#;
    let d = Project::toy()
        .file(
            "evals/datasets/pets/cases.jsonl",
            &format!(
                "{{\"id\": \"small\", \"input\": \"A dog.\", \"expected\": {expected}}}\n{{\"id\": \"huge\", \"input\": \"{big}\", \"expected\": {expected}}}\n"
            ),
        )
        .evals(&["verify"])
        .exact()
        .ok();
    d.stderr_is(&format!(
        "{TOY_FOUND}warning: evals/datasets/pets/cases.jsonl:2: the case's line is 1.5 MiB, over 1.0 MiB: every call sends it and every result and cassette keeps it; trim it if the case does not need it all\nverified 10 cases: no problems\n"
    ));
}
