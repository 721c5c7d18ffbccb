//! What `run` and `sweep` share around their runs: the servers (and where workers go), the
//! header of `results.json`, and Ctrl-C stopping whatever is running while keeping what was
//! recorded.

use crate::placement::RunEnv;
use anyhow::Context;
use lockbench_cluster::Cluster;
use lockbench_core::{Endpoints, Scenario};
use lockbench_report::{RunResults, SCHEMA_VERSION, environment};
use lockbench_workloads::RunControl;
use std::path::PathBuf;
use std::process::ExitCode;
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
    /// The managed cluster, when this command started it (it stops it at the end).
    started: Option<Cluster>,
}

impl Servers {
    /// Resolves `--cluster` (starting the managed cluster if needed) for `scenario`.
    pub async fn prepare(
        spec: &str,
        state_dir: PathBuf,
        scenario: &Scenario,
    ) -> anyhow::Result<Servers> {
        let (endpoints, label, started) = prepare_cluster(spec, state_dir.clone()).await?;
        let env = if spec == "managed" {
            RunEnv::managed(state_dir, scenario).await?
        } else {
            let mut env = RunEnv::loopback(None);
            env.compose = spec == "compose";
            env
        };
        Ok(Servers {
            endpoints,
            label,
            env,
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
            environment: environment::detect(servers),
            results: Vec::new(),
            scorecard: None,
            capacity: None,
        }
    }
}

/// Ctrl-C: sets the flag and stops the run in `current`; the command sees the flag and stops.
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
                if tokio::signal::ctrl_c().await.is_ok() {
                    eprintln!(
                        "\nlockbench: interrupted; stopping the current {what} and saving what was recorded"
                    );
                    interrupted.store(true, Ordering::SeqCst);
                    if let Some(c) = current.lock().expect("control lock").as_ref() {
                        c.stop.send_replace(true);
                    }
                }
            })
        };
        CtrlC {
            interrupted,
            current,
            watcher,
        }
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

/// 130 after Ctrl-C, 2 when something could not run, else success.
pub fn exit_code(interrupted: bool, any_error: bool) -> ExitCode {
    if interrupted {
        ExitCode::from(130)
    } else if any_error {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Resolves `--cluster`: the endpoints, a label for the results, and the managed cluster if
/// this run started it (so it is stopped afterwards).
pub async fn prepare_cluster(
    spec: &str,
    state_dir: PathBuf,
) -> anyhow::Result<(Endpoints, String, Option<Cluster>)> {
    if spec == "managed" {
        let cluster = Cluster::new(state_dir);
        eprintln!("lockbench: checking the managed cluster (starting it if needed)");
        let report = cluster
            .up()
            .await
            .context("the managed cluster did not come up (see `lockbench status`)")?;
        let endpoints = report.status.endpoints.clone();
        Ok((
            endpoints,
            "managed".into(),
            report.started.then_some(cluster),
        ))
    } else if spec == "compose" {
        // docker-compose.yml's servers, through Toxiproxy (compose/endpoints.toml).
        Ok((lockbench_compose::endpoints(), "compose".into(), None))
    } else if let Some(file) = spec.strip_prefix("external:") {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read cluster file {file}"))?;
        let endpoints =
            Endpoints::from_toml(&text).map_err(|e| anyhow::anyhow!("cluster file {file}: {e}"))?;
        Ok((endpoints, spec.to_string(), None))
    } else {
        anyhow::bail!("--cluster {spec}: expected `managed`, `compose` or `external:FILE`")
    }
}
