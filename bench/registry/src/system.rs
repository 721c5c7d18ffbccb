//! Which servers a recipe runs on: the [`Group`] the server nemesis, the resource sampler and
//! the compose fault plan act on, and the addresses its clients connect to.

use lockbench_cluster::Group;
use lockbench_core::{BackendKind, ElectionKind, Endpoints};

/// The servers a lock backend runs on.
pub fn group_of(backend: BackendKind) -> Group {
    match backend {
        BackendKind::ZkFair | BackendKind::ZkCurator | BackendKind::ZkHerd => Group::Zookeeper,
        BackendKind::ZkRwlock | BackendKind::ZkBrokenRwlock => Group::Zookeeper,
        BackendKind::EtcdLease | BackendKind::EtcdLockapi | BackendKind::EtcdHerd => Group::Etcd,
        BackendKind::RedisSetnx | BackendKind::RedisBrokenNoNx => Group::Redis,
        BackendKind::RedisPubsub | BackendKind::RedisBrokenRelease => Group::Redis,
        BackendKind::RedisBrokenRenew => Group::Redis,
        BackendKind::Redlock => Group::Redlock,
        BackendKind::RedisSentinel => Group::Failover,
    }
}

/// The servers an election recipe runs on.
pub fn election_group_of(election: ElectionKind) -> Group {
    match election {
        ElectionKind::ZkElection => Group::Zookeeper,
        ElectionKind::EtcdElection | ElectionKind::EtcdLeaseElection => Group::Etcd,
        ElectionKind::RedisLeaseElection => Group::Redis,
    }
}

/// Every endpoint group a registered system reads, in the order endpoints files list them.
pub fn endpoint_groups() -> [&'static str; 5] {
    use crate::{etcd, redis, zookeeper};
    [
        zookeeper::GROUP,
        etcd::GROUP,
        redis::REDIS,
        redis::REDLOCK,
        redis::SENTINEL,
    ]
}

/// Rejects a list no registered system reads (a misspelled `zookeper = [...]` in an external
/// cluster file would otherwise read as "this cluster has no ZooKeeper", far from the typo).
pub fn check_endpoints(endpoints: &Endpoints) -> Result<(), String> {
    let known = endpoint_groups();
    match endpoints.iter().find(|(g, _)| !known.contains(g)) {
        Some((g, _)) => Err(format!(
            "unknown field `{g}`, expected one of {}",
            known.map(|k| format!("`{k}`")).join(", ")
        )),
        None => Ok(()),
    }
}

/// The client addresses of `group` in `endpoints` (the failover pair is reached through its
/// Sentinels).
pub fn addresses(endpoints: &Endpoints, group: Group) -> &[String] {
    match group {
        Group::Failover => endpoints.get(Group::Sentinel.name()),
        g => endpoints.get(g.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cluster writes the lists the systems read, in the same order.
    #[test]
    fn the_cluster_lists_the_groups_the_systems_read() {
        assert_eq!(Group::LISTED.map(Group::name), endpoint_groups());
        let mut e = Endpoints::default();
        e.set("zookeper", vec![]);
        let err = check_endpoints(&e).unwrap_err();
        assert!(
            err.contains("`zookeper`") && err.contains("`sentinel`"),
            "{err}"
        );
    }

    /// Each recipe's system is the one its name says (`zk-*` on ZooKeeper, ...): a recipe put
    /// in the wrong group would have its faults applied to servers it never talks to.
    #[test]
    fn every_recipe_runs_on_the_system_its_name_says() {
        for b in BackendKind::ALL {
            let b = &b;
            let g = group_of(*b);
            let name = b.name();
            let expected = if name.starts_with("zk-") {
                Group::Zookeeper
            } else if name.starts_with("etcd-") {
                Group::Etcd
            } else if name == "redlock" {
                Group::Redlock
            } else if name == "redis-sentinel" {
                Group::Failover
            } else {
                Group::Redis
            };
            assert_eq!(g, expected, "{name}");
        }
        for e in ElectionKind::ALL {
            let prefix = e.name().split('-').next().unwrap();
            let expected = match prefix {
                "zk" => Group::Zookeeper,
                "etcd" => Group::Etcd,
                _ => Group::Redis,
            };
            assert_eq!(election_group_of(e), expected, "{}", e.name());
        }
    }
}
