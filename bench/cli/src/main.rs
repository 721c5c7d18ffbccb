//! `lockbench`: the command line. Parsing lives in [`cli`], each subcommand in
//! [`commands`], how a run looks on the terminal in [`console`], where log lines go in
//! [`logging`]; running scenarios is the engine's (`lockbench_runner::Runner`). This file only
//! wires them to a runtime and turns errors into exit codes.

mod builtin;
mod cli;
mod commands;
mod console;
mod limits;
mod logging;
mod progress;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
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
