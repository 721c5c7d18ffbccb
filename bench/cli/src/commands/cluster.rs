//! `lockbench up`, `down` and `status`.

use lockbench_cluster::Cluster;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Starts (or reuses) the managed cluster.
pub async fn up(state_dir: PathBuf) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    eprintln!(
        "lockbench: bringing up the managed cluster in {}",
        state_dir.display()
    );
    let report = Cluster::new(state_dir).up().await?;
    print_status(&report.status);
    eprintln!(
        "lockbench: cluster {} in {:.1}s",
        if report.started {
            "started"
        } else {
            "already up"
        },
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// Stops the managed cluster.
pub async fn down(state_dir: PathBuf) -> anyhow::Result<ExitCode> {
    Cluster::new(state_dir.clone()).down().await?;
    eprintln!(
        "lockbench: managed cluster in {} stopped",
        state_dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints the cluster's state; exit code 1 when some server is down or unhealthy.
pub async fn status(state_dir: PathBuf, json: bool) -> anyhow::Result<ExitCode> {
    let status = Cluster::new(state_dir).status().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else {
        print_status(&status);
    }
    Ok(if status.all_healthy() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_status(status: &lockbench_cluster::ClusterStatus) {
    println!(
        "{:<10} {:<10} {:<24} {:>8} {:<9} {:>8}",
        "server", "system", "endpoint", "pid", "health", "rss MiB"
    );
    for s in &status.servers {
        let health = match (s.running, s.healthy) {
            (false, _) => "down".to_string(),
            (true, true) => s.role.clone().unwrap_or_else(|| "healthy".into()),
            (true, false) => "unhealthy".into(),
        };
        println!(
            "{:<10} {:<10} {:<24} {:>8} {:<9} {:>8}",
            s.name,
            s.system,
            s.endpoint,
            s.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
            health,
            s.rss_bytes
                .map(|b| format!("{:.0}", b as f64 / 1048576.0))
                .unwrap_or_else(|| "-".into())
        );
    }
}
