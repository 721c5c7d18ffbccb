//! `lockbench`: the command line. Parsing lives in [`cli`], each subcommand in
//! [`commands`], how a run looks on the terminal in [`console`], where log lines go in
//! [`logging`], how much and how colourful the terminal output is in [`verbosity`] and
//! [`color`]; running scenarios is the engine's (`lockbench_runner::Runner`). This file only
//! wires them to a runtime and turns errors into exit codes.

mod builtin;
mod cli;
mod color;
mod commands;
mod console;
mod limits;
mod logging;
mod progress;
mod verbosity;
mod version;

use clap::{CommandFactory, FromArgMatches};
use std::process::ExitCode;

fn main() -> ExitCode {
    let choice = color::from_args(std::env::args_os());
    let matches = cli::Cli::command()
        .color(color::for_clap(choice))
        .get_matches();
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    color::init(cli.color);
    verbosity::init(cli.quiet, cli.verbose);
    lockbench_results::environment::set_version(version::VERSION);
    logging::init();
    limits::raise_open_files();
    let runtime = match runtime_for(&cli.command).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::dispatch(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The runtime a command runs on: one thread for `serve-adapter`, whose one client's request,
/// lock call and answer are a chain of wake-ups on one pipe and one socket (handed across
/// threads, each cost a thread wake-up on every call: CONTRIBUTING, "The adapter protocol's
/// cost"); every other command uses all the cores.
fn runtime_for(command: &cli::Command) -> tokio::runtime::Builder {
    match command {
        cli::Command::ServeAdapter { .. } => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
}
