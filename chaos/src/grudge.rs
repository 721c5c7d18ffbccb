//! Partitions as data: who drops whose packets (Jepsen's *grudge*), computed from a
//! [`PartitionSpec`] without touching anything, so every split is unit-tested.
//!
//! The universe is the backend's servers, the client hosts, and [`COORDINATOR`]: the
//! coordinator process in the root namespace, whose in-process clients reach the hosts from
//! the bridge address. Each split is first a *view* (whom each host can reach); the grudge is
//! its symmetric complement: `a` drops `b` when either cannot see the other. A TCP connection
//! needs both directions anyway, and the symmetric form makes the rules easy to read.
//!
//! Where clients stand, per split (documented for the scorecard):
//! - `isolate(T)`: the targets see only each other; everyone else (other servers, every
//!   client host, the coordinator) sees everyone but the targets.
//! - `halves`: a seeded minority of the servers against the majority, with every client and
//!   the coordinator on the majority side.
//! - `majorities-ring`, `bridge`: among servers only (as in Jepsen); clients see every server.
//!   With 3 servers a ring cannot be symmetric, so every server pair ends up cut; the note says so.
//! - `clients-off`: servers see servers; clients and the coordinator see no server.
//! - `redlock-overlap`: servers in name order; side A servers are the first ⌊n/2⌋+1 (1,2,3 of
//!   5), side B the last ⌊n/2⌋+1 (3,4,5); odd client hosts and the coordinator are on side A,
//!   even client hosts on side B. Servers keep seeing each other.
//! - `cut`: only the named client hosts lose only the named servers, and only in the direction
//!   asked (`requests`: the servers drop the clients' packets; `replies`: the clients drop the
//!   servers'; `both`). The one grudge that may be one-way, built directly rather than from views.

use lockbench_core::{CutDirection, PartitionSpec};
use std::collections::{BTreeMap, BTreeSet};

/// The name standing for the coordinator process (root namespace, bridge address).
pub const COORDINATOR: &str = "coordinator";

/// host -> the hosts whose packets it drops.
pub type Grudge = BTreeMap<String, BTreeSet<String>>;

/// What a split needs: the servers (in name order), the client host names, and for seeded
/// splits the servers in a seeded order.
pub struct Hosts<'a> {
    /// Server names in their natural order.
    pub servers: &'a [String],
    /// Servers in a seeded random order (for halves, ring, bridge).
    pub shuffled: &'a [String],
    /// Client host names (`client1`, ...), in index order.
    pub clients: &'a [String],
}

impl Hosts<'_> {
    fn universe(&self) -> Vec<String> {
        let mut all: Vec<String> = self.servers.to_vec();
        all.extend(self.clients.iter().cloned());
        all.push(COORDINATOR.to_string());
        all
    }
    fn clients_and_coordinator(&self) -> Vec<String> {
        let mut c = self.clients.to_vec();
        c.push(COORDINATOR.to_string());
        c
    }
}

/// The grudge for `split`; `targets` are the resolved targets of an `isolate`, or of a `cut`
/// its client hosts and servers together (each a name in `hosts`' clients or servers).
pub fn grudge(split: &PartitionSpec, hosts: &Hosts, targets: &[String]) -> Grudge {
    let universe = hosts.universe();
    let mut view: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut sees = |a: &str, bs: &[String]| {
        view.entry(a.to_string())
            .or_default()
            .extend(bs.iter().cloned());
    };
    let n = hosts.servers.len();
    let m = n / 2 + 1;
    match split {
        PartitionSpec::Isolate(_) => {
            let inside: Vec<String> = targets.to_vec();
            let outside: Vec<String> = universe
                .iter()
                .filter(|h| !inside.contains(h))
                .cloned()
                .collect();
            for h in &inside {
                sees(h, &inside);
            }
            for h in &outside {
                sees(h, &outside);
            }
        }
        PartitionSpec::Halves => {
            let minority: Vec<String> = hosts.shuffled[..n / 2].to_vec();
            let mut majority: Vec<String> = hosts.shuffled[n / 2..].to_vec();
            majority.extend(hosts.clients_and_coordinator());
            for h in &minority {
                sees(h, &minority);
            }
            for h in &majority {
                sees(h, &majority);
            }
        }
        PartitionSpec::MajoritiesRing => {
            let s = hosts.shuffled;
            let before = (m - 1) / 2;
            for (i, h) in s.iter().enumerate() {
                let ring: Vec<String> = (0..m)
                    .map(|k| s[(i + n + k - before) % n].clone())
                    .collect();
                sees(h, &ring);
                sees(h, &hosts.clients_and_coordinator());
            }
            for c in hosts.clients_and_coordinator() {
                sees(&c, &universe);
            }
        }
        PartitionSpec::Bridge => {
            let s = hosts.shuffled;
            let mid = (n - 1) / 2;
            let left: Vec<String> = s[..=mid].to_vec();
            let right: Vec<String> = s[mid..].to_vec();
            for h in &left {
                sees(h, &left);
            }
            for h in &right {
                sees(h, &right);
            }
            for h in hosts.servers {
                sees(h, &hosts.clients_and_coordinator());
            }
            for c in hosts.clients_and_coordinator() {
                sees(&c, &universe);
            }
        }
        PartitionSpec::ClientsOff => {
            let cc = hosts.clients_and_coordinator();
            for h in hosts.servers {
                sees(h, hosts.servers);
            }
            for c in &cc {
                sees(c, &cc);
            }
        }
        // The one grudge that is not the complement of views.
        PartitionSpec::Cut(cut) => return one_way(hosts, targets, cut.direction),
        PartitionSpec::RedlockOverlap => {
            let a: Vec<String> = hosts.servers[..m.min(n)].to_vec();
            let b: Vec<String> = hosts.servers[n.saturating_sub(m)..].to_vec();
            let mut side_a: Vec<String> = hosts.clients.iter().step_by(2).cloned().collect();
            side_a.push(COORDINATOR.to_string());
            let side_b: Vec<String> = hosts.clients.iter().skip(1).step_by(2).cloned().collect();
            for h in hosts.servers {
                sees(h, hosts.servers);
                if a.contains(h) {
                    sees(h, &side_a);
                }
                if b.contains(h) {
                    sees(h, &side_b);
                }
            }
            let cc = hosts.clients_and_coordinator();
            for c in &side_a {
                sees(c, &a);
                sees(c, &cc);
            }
            for c in &side_b {
                sees(c, &b);
                sees(c, &cc);
            }
        }
    }
    let can = |a: &String, b: &String| a == b || view.get(a).is_some_and(|v| v.contains(b));
    let mut grudge = Grudge::new();
    for a in &universe {
        for b in &universe {
            if !(can(a, b) && can(b, a)) {
                grudge.entry(a.clone()).or_default().insert(b.clone());
            }
        }
    }
    grudge
}

/// A cut's grudge: each client host of `targets` against each server of `targets`, on the side
/// `direction` says drops the packets.
fn one_way(hosts: &Hosts, targets: &[String], direction: CutDirection) -> Grudge {
    let clients = targets.iter().filter(|t| hosts.clients.contains(t));
    let servers: Vec<&String> = targets
        .iter()
        .filter(|t| hosts.servers.contains(t))
        .collect();
    let mut grudge = Grudge::new();
    for c in clients {
        for &s in &servers {
            if matches!(direction, CutDirection::Both | CutDirection::Replies) {
                grudge.entry(c.clone()).or_default().insert(s.clone());
            }
            if matches!(direction, CutDirection::Both | CutDirection::Requests) {
                grudge.entry(s.clone()).or_default().insert(c.clone());
            }
        }
    }
    grudge
}

/// `grudge` with every drop made mutual: who can no longer talk to whom, whichever way the
/// packets are lost (a TCP connection needs both).
pub fn both_ways(grudge: &Grudge) -> Grudge {
    let mut both = grudge.clone();
    for (a, bs) in grudge {
        for b in bs {
            both.entry(b.clone()).or_default().insert(a.clone());
        }
    }
    both
}

/// The cuts, each pair once, for notes: `a-x-b` when neither hears the other, `a-/->b` when
/// only `a`'s packets to `b` are lost (a one-way cut).
pub fn cut_pairs(grudge: &Grudge) -> Vec<String> {
    let drops = |a: &String, b: &String| grudge.get(a).is_some_and(|p| p.contains(b));
    let mut pairs = Vec::new();
    for (a, bs) in grudge {
        for b in bs {
            if !drops(b, a) {
                pairs.push(format!("{b}-/->{a}"));
            } else if a < b {
                pairs.push(format!("{a}-x-{b}"));
            }
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::Targets;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }
    fn drops(g: &Grudge, a: &str) -> Vec<String> {
        g.get(a)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    #[test]
    fn a_cut_drops_only_its_clients_links_to_its_servers_and_only_the_way_asked() {
        let servers = names(&["r1", "r2", "r3", "r4", "r5"]);
        let clients = names(&["client1", "client2"]);
        let h = Hosts {
            servers: &servers,
            shuffled: &servers,
            clients: &clients,
        };
        let cut = |direction| {
            PartitionSpec::Cut(lockbench_core::Cut {
                clients: Targets::Holder,
                servers: Targets::Majority,
                direction,
            })
        };
        let resolved = names(&["client1", "r1", "r2", "r3"]);
        let both = grudge(&cut(CutDirection::Both), &h, &resolved);
        assert_eq!(drops(&both, "client1"), names(&["r1", "r2", "r3"]));
        for s in ["r1", "r2", "r3"] {
            assert_eq!(drops(&both, s), names(&["client1"]), "{s}");
        }
        for untouched in ["client2", "r4", "r5", COORDINATOR] {
            assert!(drops(&both, untouched).is_empty(), "{untouched}");
        }
        assert_eq!(
            cut_pairs(&both),
            names(&["client1-x-r1", "client1-x-r2", "client1-x-r3"])
        );

        // Requests lost: the servers drop the client's packets, the client drops nothing.
        let requests = grudge(&cut(CutDirection::Requests), &h, &resolved);
        assert!(drops(&requests, "client1").is_empty());
        assert_eq!(drops(&requests, "r2"), names(&["client1"]));
        assert_eq!(
            cut_pairs(&requests),
            names(&["client1-/->r1", "client1-/->r2", "client1-/->r3"])
        );
        // Replies lost: the client drops the servers' packets.
        let replies = grudge(&cut(CutDirection::Replies), &h, &resolved);
        assert_eq!(drops(&replies, "client1"), names(&["r1", "r2", "r3"]));
        assert!(drops(&replies, "r1").is_empty());
        assert_eq!(
            cut_pairs(&replies),
            names(&["r1-/->client1", "r2-/->client1", "r3-/->client1"])
        );
        // Whichever way, the client and those servers cannot talk.
        assert_eq!(both_ways(&replies), both);
        assert_eq!(both_ways(&requests), both);
    }

    #[test]
    fn isolate_cuts_targets_from_everyone_else() {
        let servers = names(&["zk1", "zk2", "zk3"]);
        let clients = names(&["client1"]);
        let h = Hosts {
            servers: &servers,
            shuffled: &servers,
            clients: &clients,
        };
        let g = grudge(
            &PartitionSpec::Isolate(Targets::Leader),
            &h,
            &names(&["zk2"]),
        );
        assert_eq!(
            drops(&g, "zk2"),
            names(&["client1", "coordinator", "zk1", "zk3"])
        );
        assert_eq!(drops(&g, "zk1"), names(&["zk2"]));
        assert_eq!(drops(&g, "coordinator"), names(&["zk2"]));
        assert_eq!(cut_pairs(&g).len(), 4);
    }

    #[test]
    fn halves_keep_clients_with_the_majority() {
        let servers = names(&["e1", "e2", "e3"]);
        let shuffled = names(&["e3", "e1", "e2"]);
        let h = Hosts {
            servers: &servers,
            shuffled: &shuffled,
            clients: &[],
        };
        let g = grudge(&PartitionSpec::Halves, &h, &[]);
        assert_eq!(drops(&g, "e3"), names(&["coordinator", "e1", "e2"]));
        assert_eq!(drops(&g, "e1"), names(&["e3"]));
    }

    #[test]
    fn majorities_ring_of_five_gives_each_its_own_majority() {
        let s = names(&["r1", "r2", "r3", "r4", "r5"]);
        let h = Hosts {
            servers: &s,
            shuffled: &s,
            clients: &[],
        };
        let g = grudge(&PartitionSpec::MajoritiesRing, &h, &[]);
        assert_eq!(drops(&g, "r1"), names(&["r3", "r4"]));
        assert_eq!(drops(&g, "r3"), names(&["r1", "r5"]));
        assert!(drops(&g, COORDINATOR).is_empty());
    }

    #[test]
    fn bridge_node_sees_both_halves() {
        let s = names(&["r1", "r2", "r3", "r4", "r5"]);
        let h = Hosts {
            servers: &s,
            shuffled: &s,
            clients: &[],
        };
        let g = grudge(&PartitionSpec::Bridge, &h, &[]);
        assert!(drops(&g, "r3").is_empty());
        assert_eq!(drops(&g, "r1"), names(&["r4", "r5"]));
        assert_eq!(drops(&g, "r5"), names(&["r1", "r2"]));
    }

    #[test]
    fn clients_off_and_redlock_overlap() {
        let s = names(&["redlock1", "redlock2", "redlock3", "redlock4", "redlock5"]);
        let c = names(&["client1", "client2"]);
        let h = Hosts {
            servers: &s,
            shuffled: &s,
            clients: &c,
        };
        let g = grudge(&PartitionSpec::ClientsOff, &h, &[]);
        assert_eq!(drops(&g, "client1"), s);
        assert_eq!(
            drops(&g, "redlock1"),
            names(&["client1", "client2", "coordinator"])
        );
        let g = grudge(&PartitionSpec::RedlockOverlap, &h, &[]);
        assert_eq!(drops(&g, "client1"), names(&["redlock4", "redlock5"]));
        assert_eq!(drops(&g, "coordinator"), names(&["redlock4", "redlock5"]));
        assert_eq!(drops(&g, "client2"), names(&["redlock1", "redlock2"]));
        assert!(drops(&g, "redlock3").is_empty());
        assert_eq!(drops(&g, "redlock5"), names(&["client1", "coordinator"]));
    }
}
