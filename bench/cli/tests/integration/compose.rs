//! The Docker flow end to end, on a real Docker Engine (CI's machines run one; no registry),
//! with one build, one `up` and one `down -v` for all of it: build the server image (cached)
//! both ways, scripts/build-images and `compose build`, and check that both hold the versions
//! managed mode runs; bring docker-compose.yml up (it returns once every server is healthy),
//! run the quick suite on all ten lock backends against it, apply one fault of every kind
//! compose mode applies and check that it took effect (`compose_faults`), run client workers as
//! containers and fault them (`compose_clients`), run chaos-quick (half its backends) and a
//! packet loss as a user who is not root, only in the `docker` group, with every fault applied
//! through the Docker API (`compose_nonroot`), then make the compose subnet unreachable from
//! the host, as on Docker Desktop, and check the published ports' route and chaos-quick (the
//! other half) in lockbench's own image, the compose file's `lockbench` service
//! (`compose_published`, `compose_image`), then `down -v`
//! and check that nothing is left: no container, network or volume, no firewall rule for the
//! compose network.
//!
//! A machine without a Docker Engine fails this test; it never skips. It owns the containers
//! named `lockbench-*`, so it refuses to start while a compose cluster exists. `#[ignore]`d
//! because it is heavy: scripts/test runs it after the other tests (`--run-ignored only`).

use crate::common;
mod compose_clients;
mod compose_faults;
mod compose_image;
mod compose_nonroot;
mod compose_published;
mod compose_secure;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `cmd`, panics with its output when it fails, returns its stdout.
fn ok(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", common::text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn docker(args: &[&str]) -> String {
    ok(Command::new("docker").args(args))
}

/// `docker compose` (v2) when the plugin is there, else Debian's `docker-compose` (1.29), in
/// the repository root; and how `up` waits for health with it (v2: `--wait`; 1.29: the
/// `ready` service's `depends_on`, so plain `up -d`).
fn compose(args: &[&str]) -> Command {
    let v2 = Command::new("docker")
        .args(["compose", "version"])
        .output()
        .is_ok_and(|o| o.status.success());
    let mut cmd = if v2 {
        let mut c = Command::new("docker");
        c.arg("compose");
        c
    } else {
        Command::new("docker-compose")
    };
    cmd.current_dir(root()).args(args);
    if v2 && args.first() == Some(&"up") {
        cmd.arg("--wait");
    }
    cmd
}

/// The root namespace's firewall lines (no counters) that name the compose network: its
/// subnet or its bridge.
fn compose_rules(bridge: &str) -> Vec<String> {
    let save = ok(&mut Command::new("iptables-save"));
    save.lines()
        .filter(|l| l.contains("10.78.0.") || (!bridge.is_empty() && l.contains(bridge)))
        .map(str::to_string)
        .collect()
}

/// The Debian packages an image records (`/etc/lockbench-packages`: name, tab, version).
fn packages(image: &str) -> String {
    docker(&["run", "--rm", image, "cat", "/etc/lockbench-packages"])
}

/// The image `compose build` makes from docker-compose.yml's `build:` (what `docker compose up`
/// builds on a machine with a registry) has the packages, at the same versions, of the one
/// scripts/build-images made (this machine's offline path through the same Dockerfile), and
/// those are the release series managed mode runs (the host's packages, from
/// scripts/install-deps). Patch levels may differ: a host keeps the packages it came with
/// (install-deps installs only what is missing) while the image takes Debian's security
/// updates, so PostgreSQL 15.18 on the host and 15.20 in the image are the same server for
/// lockbench's purposes; the difference is printed, never hidden.
fn same_image_both_ways(offline: &str) {
    ok(&mut compose(&["build", "zk1"]));
    let built = packages(lockbench_compose::file::IMAGE);
    let ours = packages(offline);
    assert_eq!(built, ours, "compose build and scripts/build-images differ");
    let names: Vec<&str> = ours.lines().filter_map(|l| l.split('\t').next()).collect();
    assert!(names.contains(&"zookeeper"), "{ours}");
    let host = ok(Command::new("dpkg-query").arg("-W").args(&names));
    assert_eq!(
        release_series(&ours),
        release_series(&host),
        "the image's servers are not the release series managed mode runs (the host's \
         packages): image\n{ours}host\n{host}upgrade the host's (apt-get install --only-upgrade \
         <package>), or rebuild the image (docker rmi {offline}; scripts/build-images)"
    );
    if ours != host {
        eprintln!("patch levels differ between the image and the host:\nimage\n{ours}host\n{host}");
    }
}

/// Each `package<TAB>version` line as `package<TAB>series`: the upstream version without the
/// Debian epoch and revision, and without its last component (the patch level): `5:7.0.15-1`
/// is 7.0, `15.18-0+deb12u1` is 15, `3.8.0-11+deb12u2` is 3.8.
fn release_series(packages: &str) -> Vec<String> {
    packages
        .lines()
        .map(|line| {
            let (name, version) = line.split_once('\t').unwrap_or((line, ""));
            let upstream = version.split_once(':').map_or(version, |(_, v)| v);
            let upstream = upstream.rsplit_once('-').map_or(upstream, |(u, _)| u);
            let series = upstream.rsplit_once('.').map_or(upstream, |(s, _)| s);
            format!("{name}\t{series}")
        })
        .collect()
}

#[test]
fn a_release_series_drops_epoch_revision_and_patch_level() {
    let series = release_series(
        "redis-server\t5:7.0.15-1~deb12u10\npostgresql-15\t15.18-0+deb12u1\nzookeeper\t3.8.0-11+deb12u2",
    );
    assert_eq!(
        series,
        ["redis-server\t7.0", "postgresql-15\t15", "zookeeper\t3.8"]
    );
    assert_ne!(
        release_series("postgresql-15\t15.18-0+deb12u1"),
        release_series("postgresql-15\t16.1-1")
    );
}

/// `down -v` when dropped, so a failing test leaves nothing running (client containers first:
/// the network cannot be removed while one is attached).
struct Down;
impl Drop for Down {
    fn drop(&mut self) {
        let filter = format!("label={}", lockbench_compose::clients::LABEL);
        if let Ok(out) = Command::new("docker")
            .args(["ps", "-aq", "--filter", &filter])
            .output()
        {
            let ids = String::from_utf8_lossy(&out.stdout);
            let ids: Vec<&str> = ids.split_whitespace().collect();
            if !ids.is_empty() {
                let _ = Command::new("docker")
                    .args(["rm", "-f"])
                    .args(&ids)
                    .output();
            }
        }
        let _ = compose(&["down", "-v"]).output();
        // `down -v` stops at a network it cannot remove (a Docker Engine has refused once, for
        // "active endpoints" no container held) before the volumes: the data volume goes
        // anyway, or the next `up` (a retry) starts the replicas on this run's data.
        let _ = Command::new("docker")
            .args(["volume", "rm", "-f", "lockbench-data"])
            .output();
    }
}

/// Panics when containers named `lockbench-*` exist: a compose test brings its own cluster up
/// and down.
fn no_compose_cluster_yet() {
    let existing = docker(&["ps", "-a", "-q", "--filter", "name=^lockbench-"]);
    assert!(
        existing.trim().is_empty(),
        "containers named lockbench-* exist already (a compose cluster is up?): this test brings \
         its own up and down; run `docker-compose down -v` first"
    );
}

/// `backend`'s result in `r`, after checking that it ran, acquired and stayed safe.
fn ran_well<'a>(r: &'a serde_json::Value, backend: &str) -> &'a serde_json::Value {
    let x = common::result_of(r, backend);
    assert_eq!(x["status"], "ok", "{backend}: {x}");
    assert!(
        x["acquisitions"].as_u64().unwrap() > 0,
        "{backend}: no acquisition: {x}"
    );
    assert_eq!(x["safety"]["verdict"], "valid", "{backend}: {x}");
    x
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let t = f();
    eprintln!(
        "compose test: {what}: {:.1} s",
        start.elapsed().as_secs_f64()
    );
    t
}

#[test]
#[ignore = "owns the compose cluster's containers and is heavy; scripts/test runs it after the other tests"]
fn compose_cluster_runs_the_quick_suite_and_faults_and_leaves_nothing() {
    let info = Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output();
    assert!(
        info.as_ref().is_ok_and(|o| o.status.success()),
        "a Docker Engine is expected on this machine (CI runs one), and `docker info` failed: {}",
        info.map(|o| common::text(&o))
            .unwrap_or_else(|e| e.to_string())
    );
    no_compose_cluster_yet();
    assert!(
        compose_rules("").is_empty(),
        "firewall rules for 10.78.0.0/24 exist before the test"
    );
    compose_published::no_rule_yet();

    // Both images, once: the servers' (cached by its Dockerfile's hash) and lockbench's own,
    // from this test's binary (no release build in the test).
    let image = timed("scripts/build-images", || {
        ok(Command::new(root().join("scripts/build-images"))
            .env("LOCKBENCH_BINARY", env!("CARGO_BIN_EXE_lockbench")))
    });
    timed(
        "compose build (the Dockerfile path), versions checked",
        || same_image_both_ways(image.trim()),
    );
    let _down = Down;
    timed("compose up (until every server is healthy)", || {
        ok(&mut compose(&["up", "-d"]))
    });
    let network = docker(&["network", "inspect", "--format", "{{.Id}}", "lockbench"]);
    let bridge = format!("br-{}", &network.trim()[..12]);

    // The quick suite, every lock backend of it, against the compose cluster, 3 s a backend
    // instead of 5: what is checked is that each runs, acquires and stays safe. Redlock's keys
    // live 2 s instead of 10: on a loaded machine a release can miss its quorum (50 ms a
    // node), and the lock it leaves must expire inside the 3 s run, or Redlock shows no
    // acquisition for a reason that is not the compose flow's.
    let dir = common::scratch("compose", "quick");
    let out = timed("lockbench run quick --cluster compose", || {
        Command::new(env!("CARGO_BIN_EXE_lockbench"))
            .args([
                "run",
                "quick",
                "--cluster",
                "compose",
                "--set",
                "redlock.ttl=2s",
                "--set",
                "duration=3s",
                "--set",
                common::NO_WARM_UP,
            ])
            .arg("--out")
            .arg(dir.join("run"))
            .output()
            .unwrap()
    });
    assert!(out.status.success(), "{}", common::text(&out));
    // This host routes to the compose subnet: the route probe chose the container addresses
    // (`compose_published` checks the other way).
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .next()
            .is_some_and(|l| l
                .contains("compose: reaching the containers at their addresses on 10.78.0.0/24")),
        "the first line does not say the container addresses are used: {stderr}"
    );
    let r = common::results(&dir.join("run"));
    assert_eq!(r["cluster"], "compose");
    for backend in [
        "zk-fair",
        "zk-curator",
        "etcd-lease",
        "etcd-lockapi",
        "redis-setnx",
        "redlock",
        "pg-advisory",
        "pg-try-advisory",
        "pg-advisory-xact",
        "nats-kv",
        "mariadb-get-lock",
        "mariadb-try-lock",
    ] {
        let x = ran_well(&r, backend);
        eprintln!(
            "compose test: {backend}: {} acq/s",
            x["throughput_per_s"].as_f64().unwrap()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);

    // One fault of every kind compose mode applies, each checked where its effect shows.
    let rt = tokio::runtime::Runtime::new().unwrap();
    timed("every fault kind, checked", || {
        rt.block_on(compose_faults::every_fault_takes_effect())
    });
    // Clients as containers: a host of their own for faults, and the fencing holder in one.
    timed("a client container's isolate and pause, checked", || {
        rt.block_on(compose_clients::a_client_container_is_a_host_of_its_own())
    });
    timed(
        "lockbench run fencing --cluster compose (holder in a container)",
        compose_clients::fencing_holder_runs_in_a_container,
    );
    // Without host root: a user in the docker group, every fault through the Docker API.
    timed(
        "chaos-quick (zk-fair, etcd-lease, redis-setnx) and packet loss as a user in the docker group",
        compose_nonroot::faults_apply_for_a_user_in_the_docker_group,
    );
    // Docker Desktop's view: the subnet unreachable from the host, the published ports, and
    // lockbench itself in a container (the compose file's `lockbench` service) running
    // chaos-quick.
    timed(
        "the subnet unreachable: published ports and chaos-quick in the lockbench service",
        compose_published::the_subnet_unreachable_as_on_docker_desktop,
    );

    timed("compose down -v", || ok(&mut compose(&["down", "-v"])));
    let left = docker(&["ps", "-a", "-q", "--filter", "name=^lockbench-"]);
    assert!(left.trim().is_empty(), "containers left: {left}");
    let left = docker(&["network", "ls", "-q", "--filter", "name=^lockbench$"]);
    assert!(left.trim().is_empty(), "network left: {left}");
    let left = compose_image::service_containers();
    assert!(
        left.trim().is_empty(),
        "lockbench service containers left: {left}"
    );
    let left = docker(&["volume", "ls", "-q", "--filter", "name=^lockbench-data$"]);
    assert!(left.trim().is_empty(), "volume left: {left}");
    let rules = compose_rules(&bridge);
    assert!(rules.is_empty(), "firewall rules left: {rules:#?}");
}
