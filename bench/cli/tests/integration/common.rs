//! Helpers shared by the `lockbench` binary's end-to-end tests.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// The lines of run directory `dir`'s history (`history.jsonl.zst`, zstd-framed), in file order.
pub fn history_text(dir: &Path) -> String {
    let path = dir.join(lockbench_core::history::file::FILE_NAME);
    lockbench_core::history::file::lines(lockbench_core::history::file::open(&path, 0).unwrap())
        .collect()
}

/// A fresh scratch directory for test `name` of `suite`.
pub fn scratch(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lockbench-{suite}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes the managed cluster's endpoints (starting it if needed) to a cluster file in `dir`
/// and returns the `--cluster` value that uses it, so a test never starts or stops servers
/// other tests use.
pub fn external_cluster(dir: &Path) -> String {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let endpoints = rt.block_on(lockbench_cluster::for_tests());
    let file = dir.join("cluster.toml");
    std::fs::write(&file, endpoints.to_toml()).unwrap();
    format!("external:{}", file.display())
}

/// The `--set` that turns off the built-in scenarios' warm-up rounds (`[steady]`): the
/// helpers here give it first, so a test's own sets can turn them back on.
pub const NO_WARM_UP: &str = "steady.max=0s";

/// Runs `lockbench run SCENARIO` on the managed cluster's servers (as an external cluster,
/// see [`external_cluster`]) with `--set` for each of `sets`, writing into
/// `dir/run`; returns the output and that run directory.
pub fn run_scenario(dir: &Path, scenario: &str, sets: &[&str]) -> (Output, PathBuf) {
    let cluster = external_cluster(dir);
    let out_dir = dir.join("run");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"));
    cmd.args(["run", scenario, "--cluster", &cluster, "--out"])
        .arg(&out_dir);
    // No warm-up rounds unless a test asks for them: each would add seconds to every run.
    for set in std::iter::once(&NO_WARM_UP).chain(sets) {
        cmd.args(["--set", set]);
    }
    (cmd.output().expect("run lockbench"), out_dir)
}

/// Exit status, stdout and stderr, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A run directory's `results.json`.
pub fn results(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).expect("results.json"))
        .unwrap()
}

/// The result of `backend` in a `results.json`.
pub fn result_of<'a>(r: &'a Value, backend: &str) -> &'a Value {
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["backend"] == backend)
        .unwrap_or_else(|| panic!("no result for {backend}: {r}"))
}

/// Runs built-in `scenario` against the managed cluster's endpoints, in a fresh directory for
/// test `name` of `suite`, with `--set` for each of `sets`: quietly, as output to a pipe has
/// no progress bar, but with every narration and log line `-q` would drop. Returns the output
/// and the run directory.
pub fn run_quietly(suite: &str, name: &str, scenario: &str, sets: &[&str]) -> (Output, PathBuf) {
    let dir = scratch(suite, name);
    let cluster = external_cluster(&dir);
    let out_dir = dir.join("run");
    let mut args = vec![
        "run".to_string(),
        scenario.to_string(),
        "--cluster".into(),
        cluster,
        "--out".into(),
        out_dir.display().to_string(),
    ];
    for set in std::iter::once(&NO_WARM_UP).chain(sets) {
        args.push("--set".into());
        args.push(set.to_string());
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(&args)
        .output()
        .expect("run lockbench");
    (out, out_dir)
}

/// A private cluster of `groups` on hosts of its own (network namespaces under `lb-<tag>-`,
/// `subnet`), for a test that faults or caps its servers without touching the shared
/// cluster's; stopped on drop.
pub struct PrivateCluster {
    /// The cluster, for a nemesis of the test's own.
    pub cluster: lockbench_cluster::Cluster,
    /// The runtime its calls (and the test's nemesis) run on.
    pub rt: tokio::runtime::Runtime,
    /// Its servers' addresses.
    pub endpoints: lockbench_core::Endpoints,
    /// `--cluster external:<file>` for it.
    pub arg: String,
}

impl PrivateCluster {
    /// Brings it up (after removing what a crashed earlier run left), healthy, and writes its
    /// endpoints file into `dir`. Needs root (namespaces): fails saying so otherwise.
    pub fn up(
        tag: &str,
        subnet: &str,
        dir: &Path,
        groups: &[lockbench_core::Group],
    ) -> PrivateCluster {
        PrivateCluster::start(tag, subnet, dir, groups, false)
    }

    /// [`PrivateCluster::up`], secure (`lockbench up --secure`'s profile).
    pub fn up_secure(
        tag: &str,
        subnet: &str,
        dir: &Path,
        groups: &[lockbench_core::Group],
    ) -> PrivateCluster {
        PrivateCluster::start(tag, subnet, dir, groups, true)
    }

    fn start(
        tag: &str,
        subnet: &str,
        dir: &Path,
        groups: &[lockbench_core::Group],
        secure: bool,
    ) -> PrivateCluster {
        assert!(
            nix::unistd::geteuid().is_root(),
            "this test needs root for its private server hosts (network namespaces); CI runs \
             as root"
        );
        let cfg = lockbench_chaos::NetConfig::new(&format!("lb-{tag}-"), subnet).unwrap();
        let state = std::env::temp_dir().join(format!("lockbench-private-{tag}"));
        let cluster = lockbench_cluster::Cluster::new(state)
            .with_groups(groups)
            .with_topology(lockbench_chaos::Topology::Netns(cfg))
            .with_secure(secure);
        let file = dir.join("cluster.toml");
        // Built before `up`, so a failing `up` still stops what it started (on drop).
        let mut private = PrivateCluster {
            cluster,
            rt: tokio::runtime::Runtime::new().unwrap(),
            endpoints: lockbench_core::Endpoints::default(),
            arg: format!("external:{}", file.display()),
        };
        let (cluster, rt) = (&private.cluster, &private.rt);
        rt.block_on(cluster.down()).unwrap(); // what a crashed earlier run left
        let report = rt.block_on(cluster.up()).unwrap();
        assert!(report.status.all_healthy(), "{:?}", report.status);
        std::fs::write(&file, report.status.endpoints.to_toml()).unwrap();
        private.endpoints = report.status.endpoints;
        private
    }
}

impl Drop for PrivateCluster {
    /// Stops its servers and removes its state directory (the servers' data: hundreds of MB
    /// for a whole secure cluster).
    fn drop(&mut self) {
        if self.rt.block_on(self.cluster.down()).is_ok() {
            let _ = std::fs::remove_dir_all(self.cluster.state_dir());
        }
    }
}

/// A managed cluster of a test's own: `lockbench` commands run with their own state directory,
/// namespace prefix `lb-{tag}-` and subnet (a `/24` no other test uses), so a test that
/// faults, kills or promotes servers, or measures a cluster from stopped, leaves the shared
/// one alone and can run beside the other tests. A run started against it from stopped brings
/// up only the servers its backends use, and stops them at its end; `down` when dropped.
pub struct PrivateManaged {
    /// The namespace prefix's middle part (at most 7 characters).
    pub tag: &'static str,
    /// The cluster's subnet.
    pub subnet: &'static str,
    /// Its state directory.
    pub state: PathBuf,
}

impl PrivateManaged {
    pub fn new(tag: &'static str, subnet: &'static str) -> PrivateManaged {
        let state = scratch("private", tag);
        PrivateManaged { tag, subnet, state }
    }

    /// `lockbench args` against this cluster.
    pub fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"));
        cmd.args(args)
            .env("LOCKBENCH_STATE_DIR", &self.state)
            .env("LOCKBENCH_NETNS_PREFIX", format!("lb-{}-", self.tag))
            .env("LOCKBENCH_SUBNET", self.subnet)
            .env("LOCKBENCH_TOPOLOGY", "netns");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> std::process::Output {
        self.command(args).output().expect("run lockbench")
    }
}

impl Drop for PrivateManaged {
    fn drop(&mut self) {
        let _ = self.run(&["down"]);
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

/// Pids of live processes whose environment carries `LOCKBENCH_TEST_TAG=tag`.
pub fn tagged_processes(tag: &str) -> Vec<u32> {
    let needle = format!("LOCKBENCH_TEST_TAG={tag}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = state
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie && env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// Waits up to `budget` until no process carries `tag` ([`tagged_processes`]); returns those
/// still there.
pub fn wait_until_gone(tag: &str, budget: Duration) -> Vec<u32> {
    let deadline = Instant::now() + budget;
    loop {
        let left = tagged_processes(tag);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// History lines of `backend`.
pub fn history(dir: &Path, backend: &str) -> Vec<Value> {
    history_text(dir)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["backend"] == backend)
        .collect()
}

/// Runs scenario text `toml` against the managed cluster's endpoints (as an external cluster),
/// tagging every process with `tag`; returns the output and the run directory.
pub fn scenario_run(dir: &Path, tag: &str, toml: &str) -> (Output, PathBuf) {
    let file = dir.join("scenario.toml");
    std::fs::write(&file, toml).unwrap();
    let out_dir = dir.join("run");
    let cluster = external_cluster(dir);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["run", file.to_str().unwrap(), "--cluster", &cluster])
        .arg("--out")
        .arg(&out_dir)
        .env("LOCKBENCH_TEST_TAG", tag)
        .output()
        .expect("run lockbench");
    (out, out_dir)
}

/// What a run that kills `client1` at 1 s and pauses it at 5 s must show: the run succeeded,
/// the kill applied and `client1` restarted (the note names `restarted_as`), the later pause
/// applied to the successor, and slot 0 (client1, of two) granted again after the restart.
/// Returns `backend`'s history.
pub(crate) fn check_kill_restarted(
    out: &std::process::Output,
    run: &std::path::Path,
    backend: &str,
    restarted_as: &str,
) -> Vec<serde_json::Value> {
    let said = text(out);
    assert!(out.status.success(), "{said}");
    let h = history(run, backend);
    let find = |fault: &str, phase: &str| {
        h.iter()
            .find(|e| e["type"] == "nemesis" && e["fault"] == fault && e["phase"] == phase)
            .unwrap_or_else(|| panic!("no {fault} {phase} in the history\n{said}"))
            .clone()
    };
    let (killed, restarted) = (find("kill", "start"), find("kill", "stop"));
    assert_eq!(killed["applied"], true, "{killed}");
    assert_eq!(restarted["applied"], true, "{restarted}\n{said}");
    let note = restarted["note"].as_str().unwrap();
    assert!(
        note.contains("restarted") && note.contains(restarted_as),
        "{restarted}"
    );
    let paused = find("pause", "start");
    assert_eq!(
        paused["applied"], true,
        "the pause after the restart: {paused}"
    );
    let t = restarted["t"].as_u64().unwrap();
    let regained = h.iter().any(|e| {
        e["f"] == "acquire"
            && e["type"] == "ok"
            && e["client"].as_u64().unwrap() % 2 == 0
            && e["t"].as_u64().unwrap() > t
    });
    assert!(regained, "the restarted client1 never acquired\n{said}");
    h
}
