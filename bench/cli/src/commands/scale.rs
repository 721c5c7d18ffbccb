//! `lockbench scale`: the scale benchmark ([`lockbench_workloads::scale`]) over the managed cluster, one
//! backend after another; prints the table and writes `scale.json`.

use crate::builtin;
use crate::cli::ScaleArgs;
use anyhow::Context;
use lockbench_cluster::Cluster;
use lockbench_core::BackendKind;
use lockbench_report::RunDir;
use lockbench_runner::dispatch;
use lockbench_workloads::scale;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs the scale benchmark.
pub async fn run(args: ScaleArgs, state_dir: PathBuf) -> anyhow::Result<ExitCode> {
    let kinds: Vec<BackendKind> = args
        .backends
        .iter()
        .map(|b| lockbench_registry::parse_backend(b.trim()).map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<_>>()
        .context("--backends")?;
    if args.steps.is_empty() || args.steps.windows(2).any(|w| w[0] >= w[1]) || args.steps[0] == 0 {
        anyhow::bail!("--steps: give increasing client counts above 0, e.g. 100,500,1000");
    }
    if args.probes == 0 {
        anyhow::bail!("--probes: must be at least 1");
    }
    // The knobs of the built-in contention scenario; key 0 is the probe's, key 1 the queue's.
    let text = builtin::find("contention").context("built-in contention scenario")?;
    let scenario = lockbench_registry::load_scenario(
        "built-in scenario contention",
        text,
        &["workload.keys=2".to_string()],
    )
    .map_err(anyhow::Error::msg)?;

    let (endpoints, started) = lockbench_runner::ClusterChoice::Managed(state_dir.clone())
        .endpoints(&kinds)
        .await?;
    let run_dir = RunDir::create(Path::new("results"), "scale", args.out.as_deref())?;
    crate::say!("results go to {}", run_dir.path().display());
    crate::logging::announce(run_dir.path());

    let mut all = Vec::new();
    for kind in kinds {
        let group = lockbench_registry::group_of(kind);
        let dir = state_dir.clone();
        let rss = move || -> futures::future::BoxFuture<'static, Option<u64>> {
            let dir = dir.clone();
            Box::pin(async move {
                let status = Cluster::new(dir).status().await.ok()?;
                let mine: Vec<u64> = status
                    .servers
                    .iter()
                    .filter(|s| s.group == group)
                    .map(|s| s.rss_bytes)
                    .collect::<Option<Vec<u64>>>()?;
                (!mine.is_empty()).then(|| mine.iter().sum())
            })
        };
        crate::say!("scale: {kind}, steps {:?}", args.steps);
        let measured = dispatch::run_scale(
            kind,
            &scenario,
            &endpoints,
            &args.steps,
            args.probes,
            args.waiting,
            &rss,
        )
        .await?;
        all.push(measured);
        let json = serde_json::to_string_pretty(&all)?;
        std::fs::write(run_dir.path().join("scale.json"), json + "\n")?;
    }
    println!("{}", scale::render(&all));
    if let Some(cluster) = started {
        crate::say!("stopping the managed cluster this run started");
        if let Err(e) = cluster.down().await {
            eprintln!("warning: could not stop the managed cluster: {e:#} (run `lockbench down`)");
        }
    }
    Ok(ExitCode::SUCCESS)
}
