//! Docker Desktop's view of the compose cluster, on a Linux Docker Engine: the host cannot
//! route to the compose subnet, only the ports docker-compose.yml publishes on 127.0.0.1 reach
//! the servers. lockbench on the host must notice (its route probe), say so on its first line,
//! run through the published ports, refuse `redis-sentinel` with the reason, and record faults
//! as not applied with the reason; lockbench's own image, the compose file's `lockbench`
//! service, must still run chaos-quick (three of its backends) with every expectation met
//! ([`super::compose_image::chaos_quick_runs_in_the_lockbench_service`]).
//!
//! How the subnet is made unreachable: one iptables rule in the root namespace's OUTPUT chain
//! drops every packet to 10.78.0.0/24 sent by a process whose group is [`GID`] (the lockbench
//! and docker-compose processes of this step run under it, `setpriv --regid`), unless Docker's
//! NAT sent it there. Docker's own port forwarding (`docker-proxy`, root's group) is not
//! dropped: it stands in for Docker Desktop's VM, which forwards the published ports to
//! containers the host cannot reach; traffic between containers never crosses OUTPUT. The rule
//! is removed when the step ends, on a panic too ([`Unroutable`]'s `Drop`). Adding it needs
//! root (CI's machines run the tests as root; so does this one). A step of the compose test, on
//! the cluster it has up (one build, one `up`, one `down -v` for the whole Docker flow).

use super::{compose, compose_image, docker, ok, ran_well, root, timed};
use crate::common;
use std::path::Path;
use std::process::Command;

/// The group lockbench runs under while its subnet is unreachable.
const GID: &str = "47823";
/// The rule (after `-I` / `-D`): what Docker Desktop's host lacks, for [`GID`]'s processes.
const RULE: &[&str] = &[
    "OUTPUT",
    "-d",
    "10.78.0.0/24",
    "-m",
    "owner",
    "--gid-owner",
    GID,
    "-m",
    "conntrack",
    "!",
    "--ctstate",
    "DNAT",
    "-m",
    "comment",
    "--comment",
    "lockbench-published-test",
    "-j",
    "DROP",
];

/// The compose subnet unreachable for [`GID`] while this lives.
struct Unroutable;

impl Unroutable {
    fn add() -> Unroutable {
        ok(Command::new("iptables").arg("-I").args(RULE));
        Unroutable
    }

    fn present() -> bool {
        ok(Command::new("iptables").args(["-S", "OUTPUT"])).contains("lockbench-published-test")
    }
}

impl Drop for Unroutable {
    fn drop(&mut self) {
        // Every copy, should a crashed earlier run have left one.
        for _ in 0..10 {
            let gone = Command::new("iptables")
                .arg("-D")
                .args(RULE)
                .output()
                .map_or(true, |o| !o.status.success());
            if gone {
                break;
            }
        }
    }
}

/// `program args...` as a process of group [`GID`] (still root, no other group).
fn unrouted(program: &str) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--regid", GID, "--clear-groups", "--", program]);
    cmd
}

/// `lockbench run <args> --quiet --cluster compose --out <out>` as a process of group [`GID`].
fn run_unrouted(args: &[&str], out: &Path) -> std::process::Output {
    unrouted(env!("CARGO_BIN_EXE_lockbench"))
        .current_dir(root())
        .arg("run")
        .args(args)
        .args(["--quiet", "--cluster", "compose", "--out"])
        .arg(out)
        .output()
        .unwrap()
}

/// The first line of a command's stderr.
fn first_line(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Panics when the test's OUTPUT rule exists already (a crashed earlier run).
pub fn no_rule_yet() {
    assert!(
        !Unroutable::present(),
        "an OUTPUT rule lockbench-published-test exists before the test (a crashed run?): \
         remove it with `iptables -S OUTPUT` and `iptables -D OUTPUT ...`"
    );
}

/// `docker-compose <args>` (or `docker compose`) as a process of group [`GID`], in the
/// repository root.
fn unrouted_compose(args: &[&str]) -> Command {
    let plain = compose(args);
    let mut cmd = unrouted(plain.get_program().to_str().unwrap());
    cmd.args(plain.get_args()).current_dir(root());
    cmd
}

/// The published ports' checks, then chaos-quick in the `lockbench` service, all with the
/// compose subnet unreachable for the host's processes, on the cluster the compose test has up.
pub fn the_subnet_unreachable_as_on_docker_desktop() {
    let published = docker(&["port", "lockbench-zk1"]);
    assert!(
        published.contains("2181/tcp -> 127.0.0.1:12181"),
        "zk1's client port is not published on 127.0.0.1:12181: {published}"
    );
    assert_eq!(
        lockbench_compose::Route::detect(),
        lockbench_compose::Route::Containers,
        "this host routes to the compose subnet, so the probe must choose the containers"
    );

    let unroutable = Unroutable::add();
    assert!(Unroutable::present());
    // The rule bites: a container address is silent for GID, its published port answers.
    let direct = unrouted("timeout")
        .args(["3", "bash", "-c", "exec 3<>/dev/tcp/10.78.0.30/6379"])
        .output()
        .unwrap();
    assert!(
        !direct.status.success(),
        "group {GID} still reaches 10.78.0.30:6379: {}",
        common::text(&direct)
    );
    let pong = ok(unrouted("redis-cli").args(["-p", "16379", "ping"]));
    assert_eq!(
        pong.trim(),
        "PONG",
        "Redis's published port 16379 does not answer"
    );

    // A short run of one recipe per system, through the published ports, said on line 1.
    let dir = common::scratch("compose", "published");
    let out = timed(
        "lockbench run quick --cluster compose (published ports)",
        || {
            run_unrouted(
                &[
                    "quick",
                    "--set",
                    "backends=zk-fair,etcd-lease,redis-setnx,redlock",
                    "--set",
                    "duration=2s",
                    "--set",
                    common::NO_WARM_UP,
                ],
                &dir.join("run"),
            )
        },
    );
    assert!(out.status.success(), "{}", common::text(&out));
    let line = first_line(&out);
    assert!(
        line.contains("through their published ports on 127.0.0.1")
            && line.contains("cannot route to 10.78.0.0/24"),
        "the first line does not say the published ports are used: {line}"
    );
    let r = common::results(&dir.join("run"));
    assert_eq!(r["cluster"], "compose");
    for backend in ["zk-fair", "etcd-lease", "redis-setnx", "redlock"] {
        ran_well(&r, backend);
    }

    // redis-sentinel: refused, naming the Sentinels' container address and the way round it.
    let sentinel = run_unrouted(
        &["quick", "--set", "backends=redis-sentinel"],
        &dir.join("sentinel"),
    );
    let text = common::text(&sentinel);
    assert_eq!(sentinel.status.code(), Some(2), "{text}");
    assert!(
        text.contains("redis-sentinel cannot run on compose here")
            && text.contains("10.78.0.40:6379")
            && text.contains("`lockbench` service"),
        "{text}"
    );

    // A fault: recorded as not applied, with the reason.
    let scenario = dir.join("pause.toml");
    std::fs::write(
        &scenario,
        "name = \"published-pause\"\nseed = 1\nbackends = [\"redis-setnx\"]\nduration = \"3s\"\n\
         warmup = \"1s\"\n[workload]\nclients = 2\nkeys = 1\n\
         [[faults]]\nfault = \"pause\"\ntargets = \"leader\"\nat = \"1s\"\nduration = \"1s\"\n",
    )
    .unwrap();
    let faulted = run_unrouted(&[scenario.to_str().unwrap()], &dir.join("pause"));
    let r = common::results(&dir.join("pause"));
    assert_eq!(r["complete"], true, "{}", common::text(&faulted));
    let history = common::history_text(&dir.join("pause"));
    let pause = history
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "nemesis" && e["fault"] == "pause")
        .unwrap_or_else(|| panic!("no pause event in the history:\n{history}"));
    assert_eq!(pause["applied"], false, "{pause}");
    let note = pause["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("published ports") && note.contains("`lockbench` service"),
        "{pause}"
    );

    let _ = std::fs::remove_dir_all(&dir);

    // lockbench's own image on the compose network: the whole chaos suite, faults and client
    // containers included, with docker-compose itself unable to route to the subnet too.
    timed(
        "docker-compose run --rm lockbench run chaos-quick (zk-curator, etcd-lockapi, redlock; subnet unreachable from the host)",
        || compose_image::chaos_quick_runs_in_the_lockbench_service(unrouted_compose),
    );

    drop(unroutable);
    assert!(
        !Unroutable::present(),
        "the OUTPUT rule lockbench-published-test is still there"
    );
}
