//! `lockbench up`, `down` and `status`.

use lockbench_cluster::Cluster;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Starts (or reuses) the managed cluster, secure (TLS and lockbench's user) or plain.
pub async fn up(state_dir: PathBuf, secure: bool) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    crate::say!(
        "bringing up the {} managed cluster in {}",
        if secure { "secure" } else { "plain" },
        state_dir.display()
    );
    let cluster = Cluster::new(state_dir.clone()).with_secure(secure);
    let report = cluster.up().await?;
    print_status(&report.status);
    if secure {
        print_secure(&report.status, &state_dir);
    }
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

/// Makes the secure compose cluster's profile in `dir` (`compose-secure-init`).
pub fn compose_secure_init(dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    use lockbench_compose::secure::{DEFAULT_DIR, DIR_ENV, OVERLAY, init};
    let from_env = std::env::var_os(DIR_ENV).map(PathBuf::from);
    let dir = dir
        .or(from_env.clone())
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
    let root = init(&dir)?;
    eprintln!(
        "lockbench: the secure compose profile is in {} (certificates, passwords, the servers' \
         secret launch files; no password is printed)",
        root.display()
    );
    let env = match (&from_env, dir == std::path::Path::new(DEFAULT_DIR)) {
        (Some(e), _) if *e == dir => String::new(),
        (None, true) => String::new(),
        _ => format!("{DIR_ENV}={} ", dir.display()),
    };
    eprintln!(
        "lockbench: start it from the repository's top with\n  \
         {env}docker-compose -f docker-compose.yml -f {OVERLAY} up -d\n\
         and run with `lockbench run quick --cluster compose`"
    );
    Ok(ExitCode::SUCCESS)
}

/// Stops the managed cluster.
pub async fn down(state_dir: PathBuf) -> anyhow::Result<ExitCode> {
    Cluster::new(state_dir.clone()).down().await?;
    crate::say!("managed cluster in {} stopped", state_dir.display());
    // What killed Swarm runs left (nothing without a Docker Engine or a swarm).
    let removed = tokio::task::spawn_blocking(lockbench_launch::remove_swarm_leftovers).await?;
    if !removed.is_empty() {
        eprintln!(
            "lockbench: removed what Swarm runs no longer alive left: {}",
            removed.join(", ")
        );
    }
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

/// What a user needs to connect to the secure cluster by hand: the files, never the password.
fn print_secure(status: &lockbench_cluster::ClusterStatus, state_dir: &std::path::Path) {
    let groups = |with_user: bool| {
        let all = status.endpoints.connections();
        let secured = all.filter(|(_, c)| !c.is_plain() && c.user.is_some() == with_user);
        secured.map(|(g, _)| g).collect::<Vec<_>>().join(", ")
    };
    let (users, certs) = (groups(true), groups(false));
    eprintln!(
        "lockbench: secure: mutual TLS (CA, client certificate and key in {dir}){with_user}{cert}; \
         `lockbench run` connects this way by itself (`lockbench status --json` shows the \
         settings); every other group is plaintext (docs/secure-clusters.md)",
        dir = lockbench_cluster::secure::dir(state_dir).display(),
        with_user = match users.is_empty() {
            true => String::new(),
            false => format!(
                "; {users}: only user {} (password in the file `password`, mode 0600)",
                lockbench_cluster::secure::USER
            ),
        },
        cert = match certs.is_empty() {
            true => String::new(),
            false => format!("; {certs}: any client with a certificate of the CA"),
        },
    );
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
