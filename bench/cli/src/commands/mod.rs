//! One module per subcommand.

mod analyse;
mod cluster;
mod compare;
pub mod completions;
mod help_markdown;
pub mod k8s_manifests;
pub mod man;
pub mod proxy;
mod report;
mod run;
mod scale;
mod scenarios;
mod serve_adapter;
mod sweep;
mod verdict;
mod worker;

use crate::cli::{Cli, Command};
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs the parsed command.
pub async fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let state_dir: PathBuf = cli
        .state_dir
        .unwrap_or_else(lockbench_cluster::default_state_dir);
    match cli.command {
        Command::Run(args) => run::run(args, state_dir).await,
        Command::Scenarios => scenarios::list(),
        Command::Up { secure } => cluster::up(state_dir, secure).await,
        Command::ComposeSecureInit { dir } => cluster::compose_secure_init(dir),
        Command::Down => cluster::down(state_dir).await,
        Command::Status { json } => cluster::status(state_dir, json).await,
        Command::Report(args) => report::run(args),
        Command::Analyse { run_dirs } => analyse::run(run_dirs),
        Command::Compare(args) => compare::run(args),
        Command::Noise {
            runs,
            rounds,
            calibrate,
            slowed,
            trials,
            gate,
        } => Ok(compare::noise(
            &runs,
            rounds,
            calibrate.as_deref(),
            (&slowed, trials),
            &gate,
        )),
        Command::Scaling {
            runs,
            what_if,
            plot,
        } => Ok(compare::scaling(&runs, &what_if, plot.as_deref())),
        Command::Merge { runs, out } => Ok(compare::merge(&runs, &out)),
        Command::Worker(args) => worker::run(args).await,
        Command::ServeAdapter {
            recipe,
            life_knob,
            prefix_knob,
        } => serve_adapter::run(recipe, life_knob, prefix_knob).await,
        Command::Sweep(args) => sweep::run(args, state_dir).await,
        Command::Scale(args) => scale::run(args, state_dir).await,
        Command::Proxy(args) => proxy::run(args).await,
        Command::K8sManifests(args) => k8s_manifests::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
        Command::HelpMarkdown { dir } => help_markdown::run(&dir),
    }
}

/// Writes generated text to stdout; a reader that stopped early (`| head`) is no error.
pub fn print_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    match std::io::stdout().write_all(bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("cannot write to stdout"))
        }
        _ => Ok(()),
    }
}

/// 130 after Ctrl-C, SIGTERM or SIGHUP (partial results written, what the run started
/// stopped), 2 when something could not run, else success.
pub fn exit_code(interrupted: bool, any_error: bool) -> ExitCode {
    if interrupted {
        ExitCode::from(130)
    } else if any_error {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
