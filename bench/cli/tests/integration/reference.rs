//! docs/commands.md, docs/cluster-commands.md and docs/scenario-files.md are `lockbench
//! help-markdown`'s output: generated from the command line's definition and the knob tables,
//! so they list every command and knob by construction, and this test fails as soon as a
//! committed page and the binary disagree.

use std::process::Command;

const REGENERATE: &str = "cargo run -p lockbench -- help-markdown docs";
const PAGES: [&str; 3] = ["commands.md", "cluster-commands.md", "scenario-files.md"];

#[test]
fn the_docs_command_reference_is_the_generated_one() {
    let dir = crate::common::scratch("reference", "pages");
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("help-markdown")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::common::text(&out));
    let page = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    for (file, heading) in [
        ("commands.md", "### `lockbench run`"),
        ("commands.md", "### `lockbench scaling`"),
        ("cluster-commands.md", "### `lockbench compose-secure-init`"),
        ("cluster-commands.md", "### `lockbench up`"),
        ("scenario-files.md", "[postgres]"),
    ] {
        assert!(
            page(file).contains(heading),
            "{heading} is not generated in {file}"
        );
    }
    for file in PAGES {
        let generated = page(file);
        assert!(
            generated.lines().count() <= 300,
            "docs/{file} is {} lines: a doc page stays within 300",
            generated.lines().count()
        );
        let path = format!("{}/../../docs/{file}", env!("CARGO_MANIFEST_DIR"));
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != generated {
            let line = committed
                .lines()
                .zip(generated.lines())
                .position(|(a, b)| a != b)
                .map_or_else(|| "its end".to_string(), |i| format!("line {}", i + 1));
            panic!(
                "docs/{file} differs from the command line's help at {line}: run `{REGENERATE}`"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
