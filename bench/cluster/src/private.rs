//! A cluster of its own for a test that breaks servers.
//!
//! Tests that partition, pause, kill or promote cannot do it to the shared managed cluster
//! other tests use at the same time ([`crate::for_tests`]), so each brings up the systems it
//! needs in its own state directory, namespace prefix and subnet, and tears them down at the
//! end ([`PrivateCluster::finish`], which also checks that no namespace or link of its network
//! is left), or when dropped after a failure. It needs root (network namespaces and iptables):
//! CI runs as root, so such a test never skips there; without root it FAILS saying why, unless
//! `LOCKBENCH_ALLOW_NO_ROOT=1`.

use crate::{Cluster, Endpoints, Group, NetConfig, Network, Topology};
use std::path::PathBuf;
use std::time::Instant;

/// The systems of one test in their own network, stopped (the network removed) when dropped.
pub struct PrivateCluster {
    /// The cluster, in its own state directory.
    pub cluster: Cluster,
    /// Its network (client hosts, server hosts, leftovers).
    pub net: Network,
    /// Where its clients connect.
    pub endpoints: Endpoints,
    dir: PathBuf,
    finished: bool,
}

impl PrivateCluster {
    /// Brings `groups` up under namespace prefix `lb-{tag}-` on `subnet` (a `/24` no other
    /// test uses), after removing what an earlier, crashed run of the same test left. `None`
    /// only when not root and `LOCKBENCH_ALLOW_NO_ROOT=1` (having said so); panics when the
    /// servers do not come up healthy.
    pub async fn start(tag: &str, subnet: &str, groups: &[Group]) -> Option<PrivateCluster> {
        if !nix::unistd::geteuid().is_root() {
            if std::env::var("LOCKBENCH_ALLOW_NO_ROOT").as_deref() == Ok("1") {
                eprintln!("SKIPPED: not root (LOCKBENCH_ALLOW_NO_ROOT=1)");
                return None;
            }
            panic!(
                "this test needs root (network namespaces and iptables) and CI runs it as \
                 root; set LOCKBENCH_ALLOW_NO_ROOT=1 to skip it on a developer machine"
            );
        }
        let cfg = NetConfig::new(&format!("lb-{tag}-"), subnet).expect("a valid test subnet");
        let dir = std::env::temp_dir().join(format!("lockbench-private-{tag}"));
        let cluster = Cluster::new(dir.clone())
            .with_groups(groups)
            .with_topology(Topology::Netns(cfg.clone()));
        cluster
            .down()
            .await
            .expect("remove an earlier run's leftovers");
        let _ = std::fs::remove_dir_all(&dir);
        let started = Instant::now();
        let report = cluster.up().await.expect("the private cluster comes up");
        assert!(report.status.all_healthy(), "{:#?}", report.status);
        eprintln!(
            "the private cluster {tag} was up in {:?}",
            started.elapsed()
        );
        Some(PrivateCluster {
            cluster,
            net: Network::new(cfg),
            endpoints: report.status.endpoints,
            dir,
            finished: false,
        })
    }

    /// The last `lines` lines of each of `servers`' logs, each under its name: what a failed
    /// assertion prints.
    pub fn log_tails(&self, servers: &[&str], lines: usize) -> String {
        servers
            .iter()
            .map(|n| {
                let text = std::fs::read_to_string(self.cluster.log_file(n)).unwrap_or_default();
                let all: Vec<&str> = text.lines().collect();
                let tail = all[all.len().saturating_sub(lines)..].join("\n");
                format!("--- {n}\n{tail}\n")
            })
            .collect()
    }

    /// Tears the cluster down and checks that nothing of its network is left: no namespace,
    /// no link, nothing [`Network::leftovers`] finds.
    pub async fn finish(mut self) {
        self.cluster
            .down()
            .await
            .expect("the private cluster goes down");
        assert_eq!(self.net.leftovers(), Vec::<String>::new());
        let prefix = self.net.config().prefix.clone();
        let netns = std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()
            .expect("ip netns list");
        let netns = String::from_utf8_lossy(&netns.stdout);
        assert!(
            !netns.lines().any(|l| l.starts_with(prefix.as_str())),
            "namespaces left: {netns}"
        );
        let links = std::fs::read_dir("/sys/class/net").expect("/sys/class/net");
        for l in links.flatten() {
            let name = l.file_name().to_string_lossy().into_owned();
            assert!(!name.starts_with(prefix.as_str()), "link {name} left");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        self.finished = true;
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // A failed test (or one that does not check): still leave nothing behind.
        let cluster = self.cluster.clone();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().expect("a runtime");
            let _ = rt.block_on(cluster.down());
        })
        .join();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
