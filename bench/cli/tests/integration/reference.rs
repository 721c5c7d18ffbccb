//! docs/commands.md is `lockbench help-markdown`'s output: generated from the command line's
//! definition and the knob tables, so it lists every command and knob by construction, and
//! this test fails as soon as the committed file and the binary disagree.

use std::process::Command;

const REGENERATE: &str = "cargo run -p lockbench -- help-markdown > docs/commands.md";

#[test]
fn docs_commands_md_is_the_generated_reference() {
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("help-markdown")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::common::text(&out));
    let generated = String::from_utf8(out.stdout).unwrap();
    for heading in [
        "### `lockbench run`",
        "### `lockbench scaling`",
        "### `lockbench compose-secure-init`",
        "[postgres]",
    ] {
        assert!(generated.contains(heading), "{heading} is not generated");
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/commands.md");
    let committed = std::fs::read_to_string(path).unwrap();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| "its end".to_string(), |i| format!("line {}", i + 1));
        panic!(
            "docs/commands.md differs from the command line's help at {line}: run `{REGENERATE}`"
        );
    }
}
