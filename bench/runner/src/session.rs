//! What every run shares around it: the servers (and where workers go), the header of
//! `results.json`, and Ctrl-C stopping whatever is running while keeping what was recorded.

use crate::cluster_choice::ClusterChoice;
use crate::placement::RunEnv;
use lockbench_cluster::Cluster;
use lockbench_core::{Endpoints, Scenario};
use lockbench_results::{RunResults, SCHEMA_VERSION, environment};
use lockbench_workloads::RunControl;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The servers a command uses, and where its worker processes run.
pub struct Servers {
    /// Their endpoints.
    pub endpoints: Endpoints,
    /// `managed`, `compose` or `external:<file>`.
    pub label: String,
    /// Where workers run.
    pub env: RunEnv,
    /// The client threads this process runs its clients on (fewer beside servers on this host).
    pub client_threads: usize,
    /// The managed cluster, when this command started it (it stops it at the end).
    started: Option<Cluster>,
}

impl Servers {
    /// Makes `cluster`'s servers ready (starting the managed cluster if needed) for
    /// `scenario`.
    pub async fn prepare(cluster: ClusterChoice, scenario: &Scenario) -> anyhow::Result<Servers> {
        let (endpoints, started) = cluster.endpoints(&scenario.backends).await?;
        let client_threads = lockbench_workloads::threads::place_servers(cluster.servers_on());
        let label = cluster.label();
        let env = match &cluster {
            ClusterChoice::Managed(dir) => RunEnv::managed(dir.clone(), scenario).await?,
            ClusterChoice::Compose => {
                refuse_unreachable(scenario)?;
                RunEnv::compose(scenario).await?
            }
            ClusterChoice::External(_) => RunEnv::loopback(cluster),
        };
        Ok(Servers {
            endpoints,
            label,
            env,
            client_threads,
            started,
        })
    }

    /// Removes the run's client hosts and stops a managed cluster this command started.
    pub async fn finish(self, what: &str) {
        self.env.finish().await;
        if let Some(cluster) = self.started {
            eprintln!("lockbench: stopping the managed cluster this {what} started");
            if let Err(e) = cluster.down().await {
                eprintln!(
                    "warning: could not stop the managed cluster: {e:#} (run `lockbench down`)"
                );
            }
        }
    }

    /// A `results.json` with no results yet, for scenario `name`.
    pub async fn results_header(&self, name: &str, seed: u64) -> RunResults {
        let servers = lockbench_cluster::server_versions(&self.endpoints).await;
        RunResults {
            schema_version: SCHEMA_VERSION,
            scenario: name.to_string(),
            seed,
            started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            complete: false,
            cluster: self.label.clone(),
            connections: self.endpoints.summaries(),
            environment: environment::detect(servers),
            results: Vec::new(),
            scorecard: None,
            capacity: None,
            expectations: Vec::new(),
        }
    }
}

/// Fails when a backend of `scenario` cannot run the way this process reaches the compose
/// cluster (`redis-sentinel` through the published ports), naming it and why.
fn refuse_unreachable(scenario: &Scenario) -> anyhow::Result<()> {
    let route = lockbench_compose::route();
    for &kind in &scenario.backends {
        if let Some(why) = route.cannot_carry(lockbench_registry::group_of(kind)) {
            anyhow::bail!("{} cannot run on compose here: {why}", kind.name());
        }
    }
    Ok(())
}

/// Waits for a request to stop and names it: Ctrl-C (SIGINT), SIGTERM (what `timeout`, a
/// cancelled CI job, systemd and Kubernetes send) or SIGHUP (a closed terminal). All three
/// stop a run the same way: what it started is stopped and removed, and the partial results
/// are written.
async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        let _ = tokio::signal::ctrl_c().await;
        return "Ctrl-C";
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "Ctrl-C",
        _ = term.recv() => "SIGTERM",
        _ = hup.recv() => "SIGHUP",
    }
}

/// Ctrl-C, SIGTERM or SIGHUP: sets the flag and stops the run in `current`; the command sees
/// the flag and stops.
pub struct CtrlC {
    /// Set once Ctrl-C was pressed.
    pub interrupted: Arc<AtomicBool>,
    /// The run going on now, if any.
    pub current: Arc<Mutex<Option<RunControl>>>,
    watcher: tokio::task::JoinHandle<()>,
}

impl CtrlC {
    /// Starts watching; `what` names what is stopped (`backend`, `step`).
    pub fn watch(what: &'static str) -> CtrlC {
        let interrupted = Arc::new(AtomicBool::new(false));
        let current: Arc<Mutex<Option<RunControl>>> = Arc::new(Mutex::new(None));
        let watcher = {
            let (interrupted, current) = (interrupted.clone(), current.clone());
            tokio::spawn(async move {
                let signal = stop_signal().await;
                eprintln!(
                    "\nlockbench: interrupted ({signal}); stopping the current {what} and saving what was recorded"
                );
                interrupted.store(true, Ordering::SeqCst);
                if let Some(c) = current.lock().expect("control lock").as_ref() {
                    c.stop.send_replace(true);
                }
            })
        };
        CtrlC {
            interrupted,
            current,
            watcher,
        }
    }

    /// Makes `control` the run that Ctrl-C stops.
    pub fn set_current(&self, control: &RunControl) {
        *self.current.lock().expect("control lock") = Some(control.clone());
    }

    /// `true` once Ctrl-C was pressed.
    pub fn pressed(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }
}

impl Drop for CtrlC {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}
