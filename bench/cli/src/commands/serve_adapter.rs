//! `lockbench serve-adapter RECIPE` (hidden): one client of one of lockbench's own recipes
//! behind the adapter protocol (`docs/adapter-protocol.md`), configured from the environment
//! an adapter gets (`LOCKBENCH_ENDPOINTS`, `LOCKBENCH_CLIENT`). The built-in `lib:rust-setnx`
//! adapter runs it, so a run can put the same recipe in process and behind the protocol side
//! by side: the difference is what the protocol costs.

use anyhow::Context;
use lockbench_core::{ClientId, Endpoints};
use std::process::ExitCode;

/// Serves one client until `close` or the end of stdin. `life_knob` and `prefix_knob` name
/// the recipe's knobs that take the lock life and key prefix lockbench hands every adapter.
pub async fn run(
    recipe: String,
    life_knob: Option<String>,
    prefix_knob: Option<String>,
) -> anyhow::Result<ExitCode> {
    let kind = lockbench_registry::parse_backend(&recipe).map_err(anyhow::Error::msg)?;
    let var = |name: &str| std::env::var(name).with_context(|| format!("{name} is not set"));
    let mut sets = Vec::new();
    if let Some(knob) = life_knob {
        sets.push(format!("{knob}={}ms", var("LOCKBENCH_TTL_MS")?));
    }
    if let Some(knob) = prefix_knob {
        sets.push(format!("{knob}={}", var("LOCKBENCH_PREFIX")?));
    }
    let text = format!(
        "name = \"serve-adapter\"\nbackends = [\"{recipe}\"]\n[workload]\nclients = 1\nkeys = 64\n"
    );
    let scenario = lockbench_registry::load_scenario("serve-adapter", &text, &sets)
        .map_err(anyhow::Error::msg)?;
    let servers: Vec<String> = var("LOCKBENCH_ENDPOINTS")?
        .split(',')
        .map(str::to_string)
        .collect();
    let client: u32 = var("LOCKBENCH_CLIENT")?
        .parse()
        .context("LOCKBENCH_CLIENT")?;
    let group = lockbench_registry::group_of(kind);
    let endpoints = Endpoints::from_iter([(group.list(), servers)]);
    let backend = lockbench_registry::backend(kind, &scenario, &endpoints)?;
    let library = format!("lockbench {recipe}");
    let (input, output) = stdio();
    lockbench_adapter::serve::serve(backend, ClientId(client), &library, input, output).await?;
    Ok(ExitCode::SUCCESS)
}

/// The adapter's requests, read from stdin.
type Input = std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>>;
/// Its answers, written to stdout.
type Output = std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>;

/// stdin and stdout as the runtime's own non-blocking pipes, when they are pipes (lockbench
/// starts every adapter so): tokio's `stdin()` and `stdout()` read and write through its
/// blocking thread pool, a thread hand-off each way for every line (a direct session's p90 per
/// call fell from 8 ms to 0.19 ms without it: docs/performance.md, "The adapter protocol's cost").
/// Anything else (a terminal, a file) keeps tokio's own.
fn stdio() -> (Input, Output) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let input = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd);
    let output = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd);
    (
        match input {
            Ok(p) => Box::pin(p),
            Err(_) => Box::pin(tokio::io::stdin()),
        },
        match output {
            Ok(p) => Box::pin(p),
            Err(_) => Box::pin(tokio::io::stdout()),
        },
    )
}
