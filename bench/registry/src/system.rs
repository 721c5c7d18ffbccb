//! The registered systems ([`SYSTEMS`], the one list lockbench iterates over instead of naming
//! systems), and which servers a recipe runs on: the [`Group`] the server nemesis, the
//! resource sampler and the compose fault plan act on, and the addresses its clients connect
//! to.

use lockbench_core::{BackendKind, ElectionKind, Endpoints, Group, ServerSpec, System};

/// Every registered system, in the order the managed cluster starts them (and endpoints files
/// list their groups). Adding a system is one line here.
pub static SYSTEMS: &[&dyn System] = &[
    &lockbench_zookeeper::system::ZooKeeper,
    &lockbench_etcd::system::Etcd,
    &lockbench_redis::system::Redis,
    &lockbench_redis::system::Sentinel,
    &lockbench_postgres::system::Postgres,
    &lockbench_nats::system::Nats,
    &lockbench_mariadb::system::Mariadb,
];

/// Every server of every registered system, in start order.
pub fn servers() -> impl Iterator<Item = &'static ServerSpec> {
    SYSTEMS.iter().flat_map(|s| s.servers().iter())
}

/// The registered system called `name` (`zookeeper`, `sentinel`).
pub fn system_named(name: &str) -> Option<&'static dyn System> {
    SYSTEMS.iter().copied().find(|s| s.name() == name)
}

/// The servers a lock backend runs on (its recipe's group).
pub fn group_of(backend: BackendKind) -> Group {
    crate::backend::registered(backend).group
}

/// The system whose servers a lock backend runs on.
pub fn system_of(backend: BackendKind) -> &'static dyn System {
    let group = group_of(backend);
    SYSTEMS
        .iter()
        .copied()
        .find(|s| s.servers().iter().any(|spec| spec.group == group))
        .unwrap_or_else(|| panic!("no registered system serves {}", backend.name()))
}

/// The servers an election recipe runs on (its recipe's group).
pub fn election_group_of(election: ElectionKind) -> Group {
    crate::election::registered_election(election).group
}

/// Every group with an endpoints list of its own, in the order endpoints files list them (the
/// registered systems' order, then their servers').
pub fn listed_groups() -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for s in servers() {
        if s.group.is_listed() && !groups.contains(&s.group) {
            groups.push(s.group);
        }
    }
    groups
}

/// Every endpoint group a registered system reads, in the order endpoints files list them.
pub fn endpoint_groups() -> Vec<&'static str> {
    listed_groups().into_iter().map(Group::name).collect()
}

/// Rejects a list no registered system reads (a misspelled `zookeper = [...]` in an external
/// cluster file would otherwise read as "this cluster has no ZooKeeper", far from the typo),
/// and connection settings the group's system does not honour ([`System::check_connection`]).
pub fn check_endpoints(endpoints: &Endpoints) -> Result<(), String> {
    for (group, connection) in endpoints.connections() {
        if connection.is_plain() {
            continue;
        }
        if let Some(s) = servers().find(|s| s.group.is_listed() && s.group.name() == group) {
            s.system.check_connection(group, connection)?;
        }
    }
    let known = endpoint_groups();
    match endpoints.iter().find(|(g, _)| !known.contains(g)) {
        Some((g, _)) => Err(format!(
            "unknown field `{g}`, expected one of {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => Ok(()),
    }
}

/// The client addresses of `group` in `endpoints` (the failover pair is reached through its
/// Sentinels).
pub fn addresses(endpoints: &Endpoints, group: Group) -> &[String] {
    endpoints.get(group.list())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The systems' groups, in the order endpoints files have always listed them (a system
    /// added later lists its groups after these); a misspelled list names the known ones.
    #[test]
    fn the_systems_list_their_groups_in_file_order() {
        let groups = endpoint_groups();
        let first = [
            "zookeeper",
            "etcd",
            "redis",
            "redlock",
            "sentinel",
            "postgres",
        ];
        assert_eq!(groups[..first.len()], first);
        let mut unique = groups.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), groups.len(), "{groups:?}");
        let mut e = Endpoints::default();
        e.set("zookeper", vec![]);
        let err = check_endpoints(&e).unwrap_err();
        assert!(
            err.contains("`zookeper`") && err.contains("`sentinel`"),
            "{err}"
        );
    }

    /// Connection settings reach the group's system: Redis and etcd honour TLS and users,
    /// ZooKeeper TLS (with a CA file), a chroot and a digest user, and a setting a system does not honour is refused naming it (never ignored).
    #[test]
    fn each_system_checks_its_groups_connection_settings() {
        let file = |text: &str| Endpoints::from_toml(text).and_then(|e| check_endpoints(&e));
        file("[redis]\nendpoints = [\"r:1\"]\nuser = \"u\"\npassword_env = \"P\"\ntls = { ca = \"ca.pem\" }\n")
            .unwrap();
        file("[zookeeper]\nendpoints = [\"z:1\"]\nchroot = \"/locks\"\n").unwrap();
        file("[zookeeper]\nendpoints = [\"z:1\"]\nuser = \"u\"\npassword_file = \"pw\"\n").unwrap();
        file(
            "[zookeeper]\nendpoints = [\"z:1\"]\ntls = { ca = \"ca.pem\", server_name = \"zk\" }\n",
        )
        .unwrap();
        let err = file("[zookeeper]\nendpoints = [\"z:1\"]\ntls = {}\n").unwrap_err();
        assert!(err.contains("zookeeper.tls.ca"), "{err}");
        file("[etcd]\nendpoints = [\"e:1\"]\nuser = \"u\"\npassword_env = \"P\"\ntls = {}\n")
            .unwrap();
        let err = file("[etcd]\nendpoints = [\"e:1\"]\npassword_env = \"P\"\n").unwrap_err();
        assert!(err.contains("etcd") && err.contains("`user`"), "{err}");
        file("[sentinel]\nendpoints = [\"s:1\"]\nuser = \"u\"\npassword_env = \"P\"\ntls = {}\n")
            .unwrap();
        let err = file("[sentinel]\nendpoints = [\"s:1\"]\nchroot = \"/x\"\n").unwrap_err();
        assert!(err.contains("sentinel.chroot"), "{err}");
        let err = file("[zookeeper]\nendpoints = [\"z:1\"]\nchroot = \"locks/\"\n").unwrap_err();
        assert!(err.contains("zookeeper.chroot"), "{err}");
        let err = file("[redlock]\nendpoints = [\"r:1\"]\nchroot = \"/x\"\n").unwrap_err();
        assert!(err.contains("redlock.chroot"), "{err}");
        let err = file("[redis]\nendpoints = [\"r:1\"]\npassword = \"hunter2\"\n").unwrap_err();
        assert!(
            err.contains("never written") && !err.contains("hunter2"),
            "{err}"
        );
        let err =
            file("[redis]\nendpoints = [\"r:1\"]\ntls = { server_name = \"n\" }\n").unwrap_err();
        assert!(err.contains("redis.tls.server_name"), "{err}");
    }

    /// Server and system names are unique, and every server is in its system's roster under
    /// the system it names (the cluster finds a server's directory, host and launch by them).
    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = servers().map(|s| s.name).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "server names repeat");
        for sys in SYSTEMS {
            assert!(std::ptr::eq(system_named(sys.name()).unwrap(), *sys));
            for s in sys.servers() {
                assert_eq!(s.system.name(), sys.name(), "{}", s.name);
            }
        }
    }

    /// Each recipe's system, lock or election, is the one its name says (`zk-*` on ZooKeeper,
    /// ...): a recipe put in the wrong group would have its faults applied to servers it never
    /// talks to.
    #[test]
    fn every_recipe_runs_on_the_system_its_name_says() {
        use lockbench_redis::system::FAILOVER;
        // The short names some recipes go by; any other starts with its system's name
        // (`etcd-lease`, `nats-kv`, `mariadb-get-lock`).
        let aliases = [
            ("zk-", "zookeeper"),
            ("pg-", "postgres"),
            ("redlock", "redlock"),
            ("redis-sentinel", FAILOVER.name()),
        ];
        let expected = |name: &str| -> &'static str {
            if let Some((_, group)) = aliases.iter().find(|(p, _)| name.starts_with(p)) {
                return group;
            }
            SYSTEMS
                .iter()
                .map(|s| s.name())
                .find(|s| name.starts_with(&format!("{s}-")))
                .unwrap_or_else(|| panic!("{name} names no system"))
        };
        let system_of = |group: Group| servers().find(|s| s.group == group).unwrap().system;
        for sys in SYSTEMS {
            let locks = sys.recipes().iter();
            let locks = locks.map(|r| (r.kind.name(), r.group, group_of(r.kind)));
            let elections = sys.elections().iter();
            let elections = elections.map(|e| (e.kind.name(), e.group, election_group_of(e.kind)));
            for (name, group, found) in locks.chain(elections) {
                assert_eq!(found.name(), expected(name), "{name}");
                let runs_on = system_of(group).name();
                let why = "is listed by the system whose servers it uses";
                assert_eq!(runs_on, sys.name(), "{name} {why}");
            }
        }
    }

    /// Recipe names, lock and election (an `[expect]` table names both), are unique across
    /// systems, and the broken ones say so in their name (a broken recipe is never part of a
    /// comparison).
    #[test]
    fn recipe_names_are_unique_and_broken_ones_say_so() {
        let mut names = crate::backend_names();
        names.extend(crate::election_names());
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "recipe names repeat: {names:?}");
        for r in crate::recipes() {
            assert_eq!(r.broken, r.kind.name().contains("-broken"), "{}", r.kind);
        }
    }
}
