//! The safety net after a crash: undo every fault a killed coordinator may have left behind,
//! without stopping the cluster.

use crate::firewall;
use crate::site::proc_state;
use lockbench_cluster::Cluster;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Undoes whatever faults a crashed (`kill -9`ed) run left in `cluster`: flushes the firewall
/// of every host of its network, SIGCONTs every stopped server of ours, puts right every wall
/// clock a `clock` fault left moved, stops the servers left on a dead slow-disk pass-through and
/// removes it, and removes every client host (SIGKILLing the worker
/// processes inside). Servers a fault killed are restarted
/// by the next `Cluster::up`; `Cluster::down` removes the whole network. Returns what it did,
/// one line per action (empty when there was nothing to undo). Call it with no run active.
pub async fn cleanup(cluster: &Cluster) -> anyhow::Result<Vec<String>> {
    let mut done = Vec::new();
    if let Some(net) = cluster.network() {
        let net2 = net.clone();
        let flushed =
            tokio::task::spawn_blocking(move || firewall::flush_all(net2.existing_hosts()))
                .await??;
        if !flushed.is_empty() {
            done.push(format!("flushed firewall rules in {}", flushed.join(", ")));
        }
        let removed = tokio::task::spawn_blocking(move || net.remove_client_hosts()).await??;
        if !removed.is_empty() {
            done.push(format!("removed client hosts {}", removed.join(", ")));
        }
    }
    for s in lockbench_cluster::SERVERS.iter() {
        if let Some(pid) = cluster.server_pid(s.name)
            && proc_state(pid) == Some('T')
        {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGCONT);
            done.push(format!("resumed stopped server {} (pid {pid})", s.name));
        }
        if let Some(path) = cluster.clock_file(s.name) {
            let file = lockbench_cluster::ClockFile::open(&path)?;
            if file.is_moved() {
                file.set(0, 0);
                done.push(format!("put right the wall clock of {}", s.name));
            }
        }
    }
    let detached = cluster.detach_dead_disks().await?;
    if !detached.is_empty() {
        done.extend(detached);
        cluster
            .up()
            .await
            .map_err(|e| e.context("cannot start the servers a dead slow-disk mount stopped"))?;
        done.push("started them again on their own data directories".into());
    }
    for line in &done {
        tracing::warn!("cleanup: {line}");
    }
    Ok(done)
}
