//! `lockbench help-markdown`: docs/commands.md, generated, so the reference cannot drift from
//! the binary. Every visible command with its usage, its long help and each option's (from
//! the clap definition, the text `--help` prints), between hand-written prose
//! (`help_markdown/guide.md.in`: examples, the scenario file explained); and every scenario
//! field and knob with its default, from the scenario loader and the registered systems'
//! knob tables, the one place knobs are defined. A test compares the committed file with
//! this output.

use clap::CommandFactory;
use std::fmt::Write;
use std::process::ExitCode;

/// The hand-written parts, with `{{commands}}` and `{{defaults}}` where the generated ones go.
const GUIDE: &str = include_str!("help_markdown/guide.md.in");

/// The smallest scenario: what the defaults are shown for.
const MINIMAL: &str =
    "name = \"mine\"\nbackends = [\"zk-fair\"]\n\n[workload]\nclients = 8\nkeys = 1\n";

/// Prints the document.
pub fn run() -> anyhow::Result<ExitCode> {
    super::print_bytes(document()?.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The whole docs/commands.md.
pub fn document() -> anyhow::Result<String> {
    let defaults = lockbench_registry::load_scenario("a minimal scenario", MINIMAL, &[])
        .map_err(anyhow::Error::msg)?
        .to_toml();
    Ok(GUIDE
        .replace("{{commands}}", &commands())
        .replace("{{defaults}}", &defaults))
}

/// Every visible command, the top level first (with the global options), then each
/// subcommand in definition order.
fn commands() -> String {
    let mut top = crate::cli::Cli::command().term_width(100);
    top.build();
    let mut out = String::new();
    section(&mut out, &mut top, "lockbench", true);
    let mut subcommands: Vec<clap::Command> = top
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .cloned()
        .collect();
    for sub in &mut subcommands {
        let name = format!("lockbench {}", sub.get_name());
        section(&mut out, sub, &name, false);
    }
    out
}

/// One command's section: heading, usage, help, arguments (`global`: only the top level lists
/// the global options).
fn section(out: &mut String, cmd: &mut clap::Command, name: &str, global: bool) {
    let _ = writeln!(out, "### `{name}`\n");
    let about = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(ToString::to_string)
        .unwrap_or_default();
    if !about.is_empty() {
        let _ = writeln!(out, "{}\n", about.trim_end());
    }
    let usage = cmd.render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage:").trim();
    let _ = writeln!(out, "```text\n{usage}\n```\n");
    let args: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && a.is_global_set() == global)
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    for arg in args {
        let _ = writeln!(out, "{}", argument(arg));
    }
    if !out.ends_with("\n\n") {
        out.push('\n');
    }
}

/// `- `--out <OUT>`: help` with the long help indented under it, and the defaults, values and
/// environment variable clap would show.
fn argument(arg: &clap::Arg) -> String {
    let names = match (arg.get_short(), arg.get_long()) {
        (Some(s), Some(l)) => format!("-{s}, --{l}"),
        (None, Some(l)) => format!("--{l}"),
        (Some(s), None) => format!("-{s}"),
        (None, None) => String::new(),
    };
    let values = arg
        .get_value_names()
        .map(|v| v.iter().map(|n| format!("<{n}>")).collect::<Vec<_>>())
        .unwrap_or_else(|| vec![format!("<{}>", arg.get_id().as_str().to_uppercase())]);
    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
    let label = match (names.is_empty(), takes_value) {
        (true, _) => values.join(" "),
        (false, true) => format!("{names} {}", values.join(" ")),
        (false, false) => names,
    };
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(ToString::to_string)
        .unwrap_or_default();
    let mut text = help.trim_end().to_string();
    let mut facts = Vec::new();
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !possible.is_empty() && takes_value {
        facts.push(format!("values: {}", possible.join(", ")));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    if !defaults.is_empty() && takes_value {
        facts.push(format!("default: {}", defaults.join(", ")));
    }
    if let Some(env) = arg.get_env().filter(|_| !arg.is_hide_env_set()) {
        facts.push(format!("environment: `{}`", env.to_string_lossy()));
    }
    if !facts.is_empty() {
        let _ = write!(text, " ({})", facts.join("; "));
    }
    // A list item: its paragraphs after the first indented under it, blank lines left empty.
    let indented: Vec<String> = text
        .lines()
        .map(|l| match l {
            "" => String::new(),
            l => format!("  {l}"),
        })
        .collect();
    format!("- **`{label}`**: {}", indented.join("\n").trim_start())
}
