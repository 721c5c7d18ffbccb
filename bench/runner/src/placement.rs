//! Where a run's worker processes live ([`RunEnv`]), and the bookkeeping that comes with it.
//!
//! Why this exists: a fault can only cut a client off, or pause it with its heartbeats, if the
//! client is a separate process on a host of its own. In the managed cluster's `netns` topology
//! worker `client<N>` (slot N-1) therefore runs inside client host `client<N>` (namespace
//! `lb-client<N>`, address `10.77.0.(100+N)`), reaches the servers over the bridge like any
//! other host, and writes to the fenced resource service, which listens on the bridge address
//! (a namespace cannot reach the root namespace's 127.0.0.1). Worker and host share the name,
//! so `isolate = { nodes = ["client1"] }` cuts off exactly that worker. In the loopback
//! topology (not root, or `LOCKBENCH_TOPOLOGY=loopback`) and for external clusters, workers
//! run in the root namespace and the service binds 127.0.0.1, as before.
//!
//! On docker-compose.yml's cluster, worker `client<N>` runs in container `lockbench-client<N>`
//! on the compose network (`10.78.0.(100+N)`, [`lockbench_compose::clients`]), and the service
//! binds the compose bridge's address (`10.78.0.1`). The coordinator signals the worker by its
//! host pid (the container's only process), found once the container runs
//! ([`WorkerCommands::pid`](lockbench_launch::WorkerCommands::pid)). One such run at a time:
//! a second one would take the first one's container names, so a compose run with workers or faults holds the compose lock throughout
//! (`lockbench_compose::clients::lock_file`, one per machine as Docker's names are), waiting
//! for the run that has it and naming it. The client containers a dead run left (a `kill -9`
//! while its worker was stopped, which then never sees its stdin close) are removed when the
//! next compose run starts, by any compose run that finds the lock free; the run's own are
//! removed at its end ([`RunEnv::finish`]).
//!
//! A run that applies faults or places workers on the managed cluster holds the cluster's
//! fault-run lock throughout (`Cluster::fault_lock_file`): client host names are fixed per
//! network and a heal flushes every host's rules, so two such runs at once would undo each
//! other. On taking the lock it first undoes what a crashed (`kill -9`) run may have left
//! ([`lockbench_chaos::cleanup`]: firewall rules, stopped servers, client hosts with their
//! processes), and [`RunEnv::finish`] removes the run's client hosts at the end, whatever
//! happened. `lockbench down` removes them too, with the rest of the network.

use crate::cluster_choice::ClusterChoice;
use anyhow::Context;
use lockbench_cluster::{Cluster, ClusterLock, Network, SlowDisks, Topology};
use lockbench_core::scenario::{Processes, WorkloadKind};
use lockbench_core::{FaultKind, Scenario};
use lockbench_launch::{WorkerCommands, WorkerPlace};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the run happens: how to start a worker, where the resource service listens.
pub struct RunEnv {
    /// Address the resource service binds: the bridge address when workers run on client
    /// hosts, else loopback.
    pub bind: IpAddr,
    /// The servers the run uses (the server nemesis acts on them).
    pub cluster: ClusterChoice,
    /// Where the workers run.
    place: WorkerPlace,
    /// Held for the whole run when it applies faults or starts workers: the managed cluster's
    /// fault-run lock, or the compose lock.
    _fault_lock: Option<ClusterLock>,
    /// The servers a run with a `disk` fault moved onto slow-disk pass-throughs, moved back
    /// at [`RunEnv::finish`].
    disks: Option<SlowDisks>,
}

/// `true` when the scenario starts worker processes (every client, the fencing holder, or
/// the failover workload's candidates), or workers that dial in.
pub fn uses_workers(scenario: &Scenario) -> bool {
    scenario.workload.processes == Processes::Workers
        || scenario.workers.is_some_and(|w| w.dials_in())
        || scenario.workload.kind == WorkloadKind::Fencing
        || scenario.workload.kind == WorkloadKind::Failover
}

impl RunEnv {
    /// Workers in the root namespace, the service on loopback (compose and external
    /// clusters, and the managed cluster's loopback topology).
    pub fn loopback(cluster: ClusterChoice) -> RunEnv {
        RunEnv {
            bind: IpAddr::from([127, 0, 0, 1]),
            cluster,
            place: WorkerPlace::Here,
            _fault_lock: None,
            disks: None,
        }
    }

    /// The environment for a run of `scenario` on docker-compose.yml's cluster: client
    /// containers when it starts workers, the in-process clients' environment otherwise. A run
    /// with workers or faults holds the compose lock throughout (waiting, and saying for whom,
    /// while another run has it); the client containers a dead run left are removed.
    pub async fn compose(scenario: &Scenario) -> anyhow::Result<RunEnv> {
        RunEnv::compose_locked_by(scenario, &lockbench_compose::clients::lock_file()).await
    }

    /// [`RunEnv::compose`] with the compose lock at `lock`.
    async fn compose_locked_by(scenario: &Scenario, lock: &Path) -> anyhow::Result<RunEnv> {
        let mut env = RunEnv::loopback(ClusterChoice::Compose);
        if scenario.faults.is_empty() && !uses_workers(scenario) {
            // Leftovers are removed only when no run holds the lock: a live run's containers
            // are not leftovers.
            if let Some(_free) = lockbench_cluster::try_lock_path(lock)?
                && let Err(e) = remove_left_containers().await
            {
                eprintln!("warning: {e:#}");
            }
            return Ok(env);
        }
        env._fault_lock =
            Some(run_lock(lock, "the compose cluster's client containers and faults").await?);
        remove_left_containers().await?;
        if uses_workers(scenario) && lockbench_compose::route().is_published() {
            // A client container could not reach the resource service (the bridge's address is
            // the host's only where the host routes to the compose subnet).
            eprintln!(
                "lockbench: compose through published ports: the workers run as processes on \
                 this host, not in client containers (a client container cannot reach the \
                 coordinator's resource service here); faults on client hosts are not applied; \
                 for client containers, {}",
                lockbench_compose::route::ON_THE_NETWORK
            );
        } else if uses_workers(scenario) && lockbench_compose::secure::profile()?.is_some() {
            // A client container has none of the secure profile's files (certificates,
            // password file) its connection settings name.
            eprintln!(
                "lockbench: compose secured ({}): the workers run as processes on this host, \
                 not in client containers (those do not carry the profile's files yet); a \
                 fault that needs a client's own host (its partition) is not applied",
                lockbench_compose::secure::OVERLAY
            );
        } else if uses_workers(scenario) {
            env.bind = IpAddr::V4(lockbench_compose::clients::coordinator_address());
            env.place = WorkerPlace::Containers;
        }
        Ok(env)
    }

    /// The environment for a run of `scenario` on the managed cluster in `state_dir`: client
    /// hosts in the `netns` topology, loopback otherwise. Takes the fault-run lock (waiting for
    /// another fault run) and cleans up after a crashed one when the run needs it.
    pub async fn managed(state_dir: PathBuf, scenario: &Scenario) -> anyhow::Result<RunEnv> {
        let cluster = Cluster::new(state_dir.clone());
        let mut env = RunEnv::loopback(ClusterChoice::Managed(state_dir));
        if scenario.faults.is_empty() && !uses_workers(scenario) {
            return Ok(env);
        }
        let lock = run_lock(
            &cluster.fault_lock_file(),
            "the managed cluster's client hosts and faults",
        )
        .await?;
        for line in lockbench_chaos::cleanup(&cluster)
            .await
            .context("cannot undo what an earlier run left behind")?
        {
            eprintln!("lockbench: left behind by an earlier run: {line}");
        }
        env._fault_lock = Some(lock);
        env.disks = slow_disks(&cluster, scenario).await?;
        if let Topology::Netns(cfg) = cluster.topology() {
            env.bind = IpAddr::V4(cfg.bridge_addr());
            env.place = WorkerPlace::Hosts(Network::new(cfg));
        }
        Ok(env)
    }

    /// The managed cluster's state directory, when the run uses the managed cluster.
    pub fn managed_state(&self) -> Option<PathBuf> {
        self.cluster.managed_state().map(|p| p.to_path_buf())
    }

    /// `true` when the servers are on the managed cluster's own bridge (`netns` topology),
    /// which this host routes to from Docker's bridge networks too: a Swarm task on a bridge
    /// network of its own reaches them and the coordinator at the bridge's address.
    pub(crate) fn servers_on_managed_bridge(&self) -> bool {
        self.place.on_managed_bridge()
    }

    /// Where workers run, for the log: `client hosts on lb-br0` or `root namespace`.
    pub fn describe(&self) -> String {
        self.place.describe(self.bind)
    }

    /// The `lockbench worker` command for slot `slot`: inside client host `client<slot+1>`
    /// (created if missing) in the `netns` topology, in client container `client<slot+1>` on
    /// compose, else a plain child process.
    pub async fn worker_command(&self, slot: u32) -> anyhow::Result<Command> {
        self.worker_commands().command(slot).await
    }

    /// What makes worker commands, detached from the environment (for a task that restarts
    /// killed workers while the run goes on).
    pub fn worker_commands(&self) -> WorkerCommands {
        self.place.commands()
    }
}

/// Takes the run lock at `path`, waiting for the run that holds it and naming it (`what`: what
/// the lock guards).
async fn run_lock(path: &Path, what: &str) -> anyhow::Result<ClusterLock> {
    if let Some(lock) = lockbench_cluster::try_lock_path(path)? {
        return Ok(lock);
    }
    eprintln!("lockbench: {}", waiting_for(path, what));
    lockbench_cluster::lock_path(path).await
}

/// What a run says while it waits for the run lock at `path`.
fn waiting_for(path: &Path, what: &str) -> String {
    let who = lockbench_cluster::lock_holder(path)
        .map(|note| format!("another run, {note},"))
        .unwrap_or_else(|| "another run".into());
    format!(
        "{who} is using {what} (it holds {}); waiting for it to end",
        path.display()
    )
}

/// Removes the client containers a dead compose run left (a `kill -9` while its worker was
/// stopped or paused), saying which. Call with the compose lock held or checked free.
async fn remove_left_containers() -> anyhow::Result<()> {
    let left = lockbench_compose::clients::remove_all()
        .await
        .map_err(anyhow::Error::msg)
        .context("cannot remove the client containers an earlier run left")?;
    if !left.is_empty() {
        eprintln!(
            "lockbench: left behind by an earlier run: client containers {}",
            left.join(", ")
        );
    }
    Ok(())
}

impl RunEnv {
    /// Removes the run's client hosts (and anything still running in them). Call once, at the
    /// end of the run; releases the fault-run lock.
    pub async fn finish(self) {
        self.place.remove().await;
        if let Some(disks) = self.disks {
            eprintln!(
                "lockbench: moving {} back off their slow-disk pass-throughs",
                disks.names().join(", ")
            );
            if let Err(e) = disks.release().await {
                eprintln!("warning: {e:#} (`lockbench down` removes what is left)");
            }
        }
    }
}

/// For a run whose schedule has a `disk` fault: every running server of its backends'
/// systems restarted onto a slow-disk pass-through (the only runs that pay for one).
async fn slow_disks(cluster: &Cluster, scenario: &Scenario) -> anyhow::Result<Option<SlowDisks>> {
    if !scenario
        .faults
        .iter()
        .any(|f| f.fault.kind() == FaultKind::Disk)
    {
        return Ok(None);
    }
    let groups: Vec<_> = scenario
        .backends
        .iter()
        .map(|&b| lockbench_registry::group_of(b))
        .collect();
    let names: Vec<&str> = cluster
        .servers()
        .into_iter()
        .filter(|s| groups.contains(&s.group))
        .map(|s| s.name)
        .collect();
    eprintln!(
        "lockbench: restarting {} onto slow-disk pass-throughs for the run's disk faults",
        names.join(", ")
    );
    let disks = cluster
        .mount_slow_disks(&names)
        .await
        .context("cannot prepare the disk faults")?;
    Ok(Some(disks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn scenario(faults: bool) -> Scenario {
        let mut text = "name = \"t\"\nbackends = [\"zk-fair\"]\nduration = \"5s\"\n\
                        [workload]\nclients = 2\nkeys = 1\n"
            .to_string();
        if faults {
            text.push_str("[[faults]]\nfault = \"pause\"\ntargets = \"leader\"\nat = \"1s\"\n");
        }
        Scenario::load("t", &text, &[]).unwrap()
    }

    /// A compose run with faults waits for the run that holds the compose lock, naming it,
    /// before it touches any container; a run with neither faults nor workers does not wait
    /// (and leaves a live run's containers alone).
    #[tokio::test]
    async fn a_compose_run_with_faults_waits_for_the_one_holding_the_lock() {
        let dir =
            std::env::temp_dir().join(format!("lockbench-compose-lock-{}", std::process::id()));
        let path = dir.join("compose.lock");
        let other = lockbench_cluster::lock_path(&path).await.unwrap();
        let said = waiting_for(&path, "the compose cluster's client containers and faults");
        assert!(
            said.starts_with(&format!("another run, pid {} (", std::process::id())),
            "{said}"
        );
        assert!(said.contains(&path.display().to_string()), "{said}");

        let faulty = scenario(true);
        let waiting = tokio::spawn({
            let path = path.clone();
            async move { RunEnv::compose_locked_by(&faulty, &path).await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !waiting.is_finished(),
            "started while another run held the lock"
        );
        waiting.abort();

        let plain = tokio::time::timeout(
            Duration::from_secs(5),
            RunEnv::compose_locked_by(&scenario(false), &path),
        )
        .await
        .expect("a run without faults or workers does not wait")
        .unwrap();
        assert!(plain._fault_lock.is_none());
        assert!(lockbench_cluster::try_lock_path(&path).unwrap().is_none());
        drop(other);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
