//! What a `kill -9` of a compose run leaves, and the next compose run's cleanup of it
//! ([`RunEnv::compose`], [`lockbench_compose::clients::remove_all`]), on a real Docker Engine
//! and the servers' image (`scripts/build-images`, cached).
//!
//! A client container's worker ends when its stdin closes: the coordinator's `docker run -i`
//! dies with it. A worker that is stopped then (the fencing holder, SIGSTOPped after its grant)
//! or whose container is paused (`pause` of `client<N>`, the cgroup freezer) never reads that
//! end of file, so the container outlives the run. This test makes both leftovers the same
//! way (`cat` as the worker: it too ends at the end of its stdin), checks they are left, and
//! that the next compose run removes them when it starts, even one without workers or faults
//! (which used to leave them).
//!
//! A machine without a Docker Engine fails it; it never skips. `#[ignore]`d because it needs
//! the image (minutes to build cold): scripts/test runs it first, alone, one at a time
//! with the compose end-to-end test (the `compose-containers` group in .config/nextest.toml).

use lockbench_compose::clients::{LABEL, host_pid};
use lockbench_core::Scenario;
use lockbench_runner::placement::RunEnv;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Worker slots no run uses (runs count from 1 up to their client count).
const STOPPED: u32 = 98;
const PAUSED: u32 = 99;

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `docker <args>`, its stdout; panics with Docker's complaint when it fails.
fn docker(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run docker: {e}"));
    assert!(out.status.success(), "docker {args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The client containers that exist (names), whatever their state.
fn client_containers() -> Vec<String> {
    let filter = format!("label={LABEL}");
    let mut names: Vec<String> =
        docker(&["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"])
            .lines()
            .map(str::to_string)
            .collect();
    names.sort();
    names
}

/// `docker run -i --rm` of client container `client<n>` as a run starts one (the label, the
/// name, stdin attached), with `cat` as its worker.
fn start(n: u32, image: &str) -> Child {
    let name = format!("client{n}");
    Command::new("docker")
        .args(["run", "-i", "--rm", "--name"])
        .arg(lockbench_compose::container(&name))
        .args(["--label", &format!("{LABEL}={name}")])
        .args(["--entrypoint", "cat", image])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("docker run")
}

/// The host pid of client container `client<n>`'s worker once it is `cat` (runc's init
/// process has the same pid until it execs, and stopping it then stops the container's
/// start), as the worker a run stops is long since running.
async fn running_cat(n: u32) -> u32 {
    let pid = host_pid(n).await.unwrap();
    let comm = format!("/proc/{pid}/comm");
    let start = Instant::now();
    while std::fs::read_to_string(&comm).unwrap_or_default().trim() != "cat" {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "client{n} does not run cat"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pid
}

/// Removes this test's containers when dropped, so a failing test leaves none behind.
struct Cleanup;
impl Drop for Cleanup {
    fn drop(&mut self) {
        for n in [STOPPED, PAUSED] {
            let c = lockbench_compose::container(&format!("client{n}"));
            let _ = Command::new("docker").args(["rm", "-f", &c]).output();
        }
    }
}

#[tokio::test]
#[ignore = "needs a Docker Engine and the servers' image; scripts/test runs it first, alone"]
async fn a_stopped_or_paused_leftover_client_container_is_removed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // The servers' image only: its containers run `cat`, never lockbench (whose image would
    // mean a release build of lockbench first, minutes on CI for nothing this test uses).
    let built = Command::new(root.join("scripts/build-images"))
        .arg("--servers")
        .output()
        .expect("scripts/build-images --servers");
    assert!(
        built.status.success(),
        "scripts/build-images --servers: {}",
        text(&built)
    );
    let image = String::from_utf8_lossy(&built.stdout).trim().to_string();
    let _cleanup = Cleanup;
    // The next run: no workers, no faults (the quick suite's shape).
    let next = Scenario::load(
        "next",
        "name = \"next\"\nbackends = [\"zk-fair\"]\n[workload]\nclients = 2\nkeys = 1\n",
        &[],
    )
    .unwrap();
    // What an earlier run left is not this test's to count.
    drop(RunEnv::compose(&next).await.unwrap());
    assert_eq!(
        client_containers(),
        Vec::<String>::new(),
        "leftovers before the test"
    );

    let mut stopped = start(STOPPED, &image);
    let pid = running_cat(STOPPED).await;
    kill(Pid::from_raw(pid as i32), Signal::SIGSTOP).unwrap();
    let mut paused = start(PAUSED, &image);
    running_cat(PAUSED).await;
    docker(&[
        "pause",
        &lockbench_compose::container(&format!("client{PAUSED}")),
    ]);
    // The coordinator is killed: its `docker run -i` clients die with it (PR_SET_PDEATHSIG).
    for client in [&mut stopped, &mut paused] {
        client.kill().unwrap();
        client.wait().unwrap();
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let expected = vec![
        format!("lockbench-client{STOPPED}"),
        format!("lockbench-client{PAUSED}"),
    ];
    assert_eq!(
        client_containers(),
        expected,
        "the leftovers this test makes were not left"
    );

    let started = Instant::now();
    drop(RunEnv::compose(&next).await.unwrap());
    let took = started.elapsed();
    assert_eq!(
        client_containers(),
        Vec::<String>::new(),
        "left after the next run started (does another compose run hold {}?)",
        lockbench_compose::clients::lock_file().display()
    );
    eprintln!("leftovers test: the next run removed a stopped and a paused container in {took:?}");
    assert!(took < Duration::from_secs(30), "the cleanup took {took:?}");
}
