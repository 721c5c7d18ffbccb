//! Waiting for the compose cluster: from where lockbench runs, the way it reaches the servers
//! ([`mod@crate::route`]), with the managed cluster's health checks, bounded, and naming what is
//! not healthy.

use crate::file::container;
use crate::route::route;
use anyhow::bail;
use std::time::Duration;

/// `true` when Docker says the compose cluster's containers exist and run (its first server's
/// container is running). `false` without Docker.
pub fn detect() -> bool {
    let first = container(lockbench_cluster::SERVERS[0].name);
    std::process::Command::new("docker")
        .args(["inspect", "--format", "{{.State.Running}}", &first])
        .stderr(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"true"))
}

/// Fails when a Docker engine answers and says the compose cluster does not run (so the
/// route is not probed against containers that do not exist).
pub fn ensure_runs() -> anyhow::Result<()> {
    if docker_answers() && !detect() {
        bail!(
            "the compose cluster does not run (no running container {}): start it with \
             `docker-compose up -d` (or `docker compose up -d --wait`) after scripts/build-images",
            container(lockbench_cluster::SERVERS[0].name)
        );
    }
    Ok(())
}

/// Waits until `servers` of the compose cluster (the ones a run uses; every server for
/// [`SERVERS`](lockbench_cluster::SERVERS)) answer as healthy (ZooKeeper serving with one
/// leader, etcd `/health`, Redis `PING`, Sentinels naming a primary) the way this process
/// reaches them ([`route`]: container addresses or published ports), at most `timeout`; over
/// TLS as lockbench's user when it runs secured ([`crate::secure`]).
/// Fails at once when Docker says the cluster does not run, else at the deadline, naming each
/// unhealthy server with its address and its container.
pub async fn wait_healthy(
    timeout: Duration,
    servers: &[&'static lockbench_cluster::ServerSpec],
) -> anyhow::Result<()> {
    ensure_runs()?;
    let topo = route().topology();
    let sec = crate::secure::probe()?;
    let sec = sec.as_ref();
    let healthy = |timeout| lockbench_cluster::wait_servers_healthy(&topo, servers, sec, timeout);
    if healthy(Duration::ZERO).await.is_ok() {
        return Ok(());
    }
    eprintln!(
        "lockbench: waiting up to {}s for the compose cluster to be healthy",
        timeout.as_secs()
    );
    match healthy(timeout).await {
        Ok(()) => Ok(()),
        Err(unhealthy) => {
            let list: Vec<String> = unhealthy
                .iter()
                .filter_map(|n| lockbench_cluster::by_name(n))
                .map(|s| {
                    format!(
                        "{} at {} (container {})",
                        s.name,
                        topo.endpoint(s),
                        container(s.name)
                    )
                })
                .collect();
            bail!(
                "the compose cluster is not healthy after {}s: {} (see `docker ps` and \
                 `docker logs <container>`)",
                timeout.as_secs(),
                list.join(", ")
            )
        }
    }
}

/// `true` when a Docker engine answers.
fn docker_answers() -> bool {
    std::process::Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Which cluster a bench uses, and why (for the bench's first line): `LOCKBENCH_CLUSTER`
/// (`managed` or `compose`) when set, else `compose` when its containers run (`docker-compose
/// up` then `cargo bench` just works), else `managed`. On compose the reason ends with the
/// way the servers are reached ([`Route::describe`](crate::Route::describe)).
pub fn bench_cluster() -> Result<(&'static str, String), String> {
    let (cluster, why) = match std::env::var("LOCKBENCH_CLUSTER").ok().as_deref() {
        Some("compose") => ("compose", "LOCKBENCH_CLUSTER=compose"),
        Some("managed") => ("managed", "LOCKBENCH_CLUSTER=managed"),
        Some("") | None if detect() => ("compose", "its containers run"),
        Some("") | None => ("managed", "no compose cluster runs"),
        Some(other) => {
            return Err(format!(
                "LOCKBENCH_CLUSTER={other}: expected `managed` or `compose`"
            ));
        }
    };
    if cluster == "compose" && detect() {
        return Ok((cluster, format!("{why}; {}", route().describe())));
    }
    Ok((cluster, why.to_string()))
}
