//! `cargo run -p lockbench-cluster --example cluster -- up|down|status`: the managed cluster
//! without the CLI (for developing this crate while other crates do not build). Honours
//! `LOCKBENCH_STATE_DIR`, `LOCKBENCH_TOPOLOGY`, `LOCKBENCH_SUBNET`, `LOCKBENCH_NETNS_PREFIX`.
use lockbench_cluster::{Cluster, default_state_dir};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cluster = Cluster::new(default_state_dir());
    match std::env::args().nth(1).as_deref() {
        Some("up") => {
            let t = std::time::Instant::now();
            let r = cluster.up().await?;
            println!("{}", serde_json::to_string_pretty(&r.status.endpoints)?);
            eprintln!("up in {:?} (started: {})", t.elapsed(), r.started);
        }
        Some("down") => cluster.down().await?,
        _ => println!(
            "{}",
            serde_json::to_string_pretty(&cluster.status().await?)?
        ),
    }
    Ok(())
}
