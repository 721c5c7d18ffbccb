//! The command line's conventions: completions and man pages generated from its definition,
//! `-h` short and `--help` long, `--version` naming the commit, and colour only where it is
//! wanted (`--color`, NO_COLOR), checked on a pseudo-terminal where `auto` would colour.

use crate::common;
use crate::compare::{result, write};
use std::process::{Command, Output};

fn lockbench(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", common::text(&out));
    out
}

fn stdout(args: &[&str]) -> String {
    String::from_utf8(lockbench(args).stdout).unwrap()
}

/// The visible subcommands, as `lockbench --help` lists them.
fn subcommands() -> Vec<String> {
    let help = stdout(&["--help"]);
    let listed = help
        .split("Commands:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("a command list");
    let names: Vec<String> = listed
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|n| n != "help")
        .collect();
    assert!(names.len() > 10, "{help}");
    names
}

#[test]
fn completions_are_generated_for_every_shell() {
    let bash = stdout(&["completions", "bash"]);
    assert!(bash.contains("run") && bash.contains("--set"), "{bash}");
    assert!(bash.contains("compose-secure-init"), "not every command");
    // bash itself reads it without a syntax error.
    let dir = common::scratch("conventions", "completions");
    let file = dir.join("lockbench.bash");
    std::fs::write(&file, &bash).unwrap();
    let check = Command::new("bash").arg("-n").arg(&file).output().unwrap();
    assert!(check.status.success(), "{}", common::text(&check));
    std::fs::remove_dir_all(&dir).ok();
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let script = stdout(&["completions", shell]);
        assert!(
            script.contains("lockbench") && script.contains("--set"),
            "{shell}: {script}"
        );
    }
}

#[test]
fn the_man_page_names_every_command_and_dir_writes_one_page_each() {
    let page = stdout(&["man"]);
    assert!(page.contains(".TH"), "not roff: {page}");
    for name in subcommands() {
        // roff escapes every hyphen; each command is listed as its own page, `lockbench-run(1)`.
        let entry = format!("lockbench-{name}(1)").replace('-', "\\-");
        assert!(page.contains(&entry), "the man page does not name `{name}`");
    }
    let dir = common::scratch("conventions", "man");
    lockbench(&["man", "--dir", dir.to_str().unwrap()]);
    for name in ["lockbench.1", "lockbench-run.1", "lockbench-scaling.1"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert!(text.contains(".TH"), "{name} missing or not roff");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let line = stdout(&["--version"]);
    let (name, rest) = line.trim().split_once(' ').unwrap();
    assert_eq!(name, "lockbench");
    let (crate_version, commit) = rest.split_once(' ').unwrap();
    assert_eq!(crate_version, env!("CARGO_PKG_VERSION"));
    let commit = commit
        .strip_prefix('(')
        .and_then(|c| c.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line}"));
    if commit != "unknown commit" {
        let (hash, date) = commit.split_once(' ').unwrap_or_else(|| panic!("{line}"));
        let hash = hash.trim_end_matches("-dirty");
        assert!(
            hash.len() >= 7 && hash.chars().all(|c| c.is_ascii_hexdigit()),
            "{line}"
        );
        let digits: Vec<&str> = date.split('-').collect();
        assert!(
            digits.len() == 3 && digits.iter().all(|d| d.parse::<u32>().is_ok()),
            "{line}"
        );
    }
    // The same version on every subcommand.
    assert_eq!(
        stdout(&["run", "--version"]),
        format!("lockbench-run {rest}\n")
    );
}

#[test]
fn short_help_fits_a_screen_and_long_help_has_the_details() {
    let short = stdout(&["-h"]);
    let long = stdout(&["--help"]);
    assert!(short.lines().count() <= 30, "{short}");
    assert!(long.lines().count() > short.lines().count());
    assert!(
        long.contains("PostgreSQL") && !short.contains("PostgreSQL"),
        "{long}"
    );
    let up = stdout(&["up", "--help"]);
    assert!(up.contains("PostgreSQL primary and replica") && up.contains("Sentinels"));
    // `run -h`: one line per option, no wrapped summary.
    let run = stdout(&["run", "-h"]);
    let options = run.split("Options:\n").nth(1).unwrap();
    let wrapped: Vec<&str> = options
        .lines()
        .filter(|l| l.starts_with("          "))
        .collect();
    assert!(wrapped.is_empty(), "{run}");
    assert!(run.lines().count() < stdout(&["run", "--help"]).lines().count());
}

/// `compare` of two runs with a regression: a table with a coloured verdict when colour is on.
fn compare_args(name: &str) -> (std::path::PathBuf, Vec<String>) {
    let dir = common::scratch("conventions", name);
    let base = write(&dir, "base", vec![result("zk-fair", 10_000, 0)]);
    let slow = write(&dir, "slow", vec![result("zk-fair", 40_000, 0)]);
    let args = vec![
        "compare".to_string(),
        base.display().to_string(),
        slow.display().to_string(),
    ];
    (dir, args)
}

/// Runs lockbench with `args` on a pseudo-terminal (util-linux `script`), so that `--color
/// auto` sees a terminal; returns everything it wrote there.
fn on_a_terminal(args: &[String], no_color: Option<&str>) -> String {
    let command = std::iter::once(env!("CARGO_BIN_EXE_lockbench").to_string())
        .chain(args.iter().cloned())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut script = Command::new("script");
    script
        .args(["-qec", &command, "/dev/null"])
        .env("TERM", "xterm")
        .env_remove("NO_COLOR");
    if let Some(v) = no_color {
        script.env("NO_COLOR", v);
    }
    let out = script.output().expect("util-linux `script`");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn no_color_leaves_no_escape_code_on_a_terminal_and_color_flags_win() {
    let (dir, args) = compare_args("color");
    let coloured = on_a_terminal(&args, None);
    assert!(
        coloured.contains("REGRESSED") && coloured.contains('\x1b'),
        "a terminal gets colour by default: {coloured:?}"
    );
    let plain = on_a_terminal(&args, Some("1"));
    assert!(plain.contains("REGRESSED"), "{plain:?}");
    assert!(
        !plain.contains('\x1b'),
        "NO_COLOR=1 left escapes: {plain:?}"
    );
    assert!(
        on_a_terminal(&args, Some("")).contains('\x1b'),
        "an empty NO_COLOR does not count"
    );
    let mut never = args.clone();
    never.push("--color=never".into());
    assert!(!on_a_terminal(&never, None).contains('\x1b'));
    // A pipe gets no colour unless asked for, and `always` wins over NO_COLOR.
    let piped = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(&args)
        .output()
        .unwrap();
    assert!(!piped.stdout.contains(&0x1b));
    let forced = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(&args)
        .arg("--color=always")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(forced.stdout.contains(&0x1b));
    std::fs::remove_dir_all(&dir).ok();
}
