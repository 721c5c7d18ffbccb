//! The committed Docker files are exactly what the generator makes from the managed cluster's
//! settings (the drift test). `UPDATE_EXPECT=1 cargo test -p lockbench-compose --test generated`
//! rewrites them.

use std::path::Path;

#[test]
fn committed_compose_files_match_the_generator() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut stale = Vec::new();
    for (path, generated) in lockbench_compose::file::generated_files() {
        let file = root.join(path);
        let committed = std::fs::read_to_string(&file).unwrap_or_default();
        if committed != generated {
            if update {
                std::fs::write(&file, &generated).unwrap();
            } else {
                stale.push(path);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} differ from what lockbench-compose generates from bench/cluster's settings; \
         run `UPDATE_EXPECT=1 cargo test -p lockbench-compose --test generated` and commit them"
    );
}

/// The settings managed mode uses are in the compose file, word for word (a guard against a
/// generator that stops using the shared launch).
#[test]
fn compose_file_has_the_managed_settings() {
    let yml = lockbench_compose::file::compose_file();
    for needle in [
        "tickTime=500",
        "4lw.commands.whitelist=mntr,srvr,ruok,stat,cons,wchs",
        "sentinel down-after-milliseconds lockbench 1000",
        "sentinel monitor lockbench 10.78.0.40 6379 2",
        "--repl-diskless-sync yes",
        "--appendonly no",
        "condition: service_healthy",
        "container_name: lockbench-sen3",
        "shared_preload_libraries = 'pg_stat_statements'",
        "nats-route://10.78.0.62:6222",
    ] {
        assert!(yml.contains(needle), "docker-compose.yml lacks {needle:?}");
    }
    let e = lockbench_compose::endpoints();
    // Every registered server of a listed group, in its list, in start order.
    let lengths: Vec<(&str, usize)> = e.iter().map(|(g, a)| (g, a.len())).collect();
    let mut expected: Vec<(&str, usize)> = Vec::new();
    for s in lockbench_registry::system::servers().filter(|s| s.group.is_listed()) {
        match expected.iter_mut().find(|(g, _)| *g == s.group.list()) {
            Some((_, n)) => *n += 1,
            None => expected.push((s.group.list(), 1)),
        }
    }
    assert_eq!(lengths, expected);
    assert_eq!(e.get("zookeeper")[0], "10.78.0.11:2181");
    assert_eq!(e.get("sentinel")[0], "10.78.0.45:26379");
}
