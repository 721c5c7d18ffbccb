//! `lockbench proxy`: lockbench's link proxy behind Toxiproxy's HTTP API
//! ([`lockbench_chaos::ToxiproxyApi`]).
//!
//! Why a subcommand: in compose mode the link proxy runs in a container of its own between
//! the clients and the servers, and is driven over the network like Toxiproxy (whose server
//! cannot be installed here). Any Toxiproxy client can drive it; `--config` takes Toxiproxy's
//! own config file format (the list `POST /populate` takes), so proxies exist before the
//! first client connects. It serves until SIGTERM or SIGINT (what `docker stop` and Ctrl-C
//! send), then closes every proxy and exits 0.

use anyhow::Context;
use lockbench_chaos::ToxiproxyApi;
use lockbench_chaos::toxiproxy_api::ProxySpec;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio::signal::unix::{SignalKind, signal};

/// Arguments of `lockbench proxy`.
#[derive(Debug, clap::Args)]
pub struct ProxyArgs {
    /// Address of the HTTP API (Toxiproxy's default port).
    #[arg(long, default_value = "0.0.0.0:8474", value_name = "ADDR")]
    pub api: SocketAddr,

    /// Proxies to create at start, in Toxiproxy's config format.
    ///
    /// A JSON list of `{"name", "listen", "upstream", "enabled"}`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Serves the API until SIGTERM or SIGINT.
pub async fn run(args: ProxyArgs) -> anyhow::Result<ExitCode> {
    // Handlers first, so a signal sent as soon as the API is announced is not fatal.
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let api = ToxiproxyApi::new();
    if let Some(file) = &args.config {
        let text = std::fs::read(file)
            .with_context(|| format!("cannot read the proxy config {}", file.display()))?;
        let specs = ProxySpec::parse_list(&text)
            .map_err(|e| anyhow::anyhow!("{} (--config): {}", file.display(), e.message))?;
        api.populate(specs)
            .await
            .map_err(|e| anyhow::anyhow!("{} (--config): {}", file.display(), e.message))?;
    }
    let listener = tokio::net::TcpListener::bind(args.api)
        .await
        .with_context(|| format!("cannot listen on {} (--api)", args.api))?;
    for (name, p) in api.proxies().await {
        let state = if p.enabled { "" } else { " (disabled)" };
        println!(
            "lockbench proxy: {name}: {} -> {}{state}",
            p.listen, p.upstream
        );
    }
    println!(
        "lockbench proxy: Toxiproxy API on http://{}",
        listener.local_addr()?
    );
    let stop = async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    };
    api.serve(listener, stop)
        .await
        .context("the proxy API failed")?;
    eprintln!("lockbench proxy: stopped, every proxy closed");
    Ok(ExitCode::SUCCESS)
}
