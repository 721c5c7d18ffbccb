//! The secure compose cluster, on a real Docker Engine: `lockbench
//! compose-secure-init` makes the profile, `docker-compose -f docker-compose.yml -f
//! compose/secure.yml up -d` starts the servers secured (it returns once every secured
//! healthcheck, TLS with the client certificate as lockbench's user, passes), a plaintext
//! request to a Redis, etcd or ZooKeeper port gets no answer, `lockbench run quick --cluster
//! compose` finds the profile by itself and runs zk-fair, etcd-lease, redis-setnx and Redlock
//! over mutual TLS as lockbench's users (exit 0: every expectation met; TLS and auth recorded),
//! no password is in the run directory, the terminal or what Docker shows of the containers,
//! and `down -v` leaves no container, network or volume.
//!
//! Its own test, not a step of the plain compose test: the secure servers are other
//! containers (another command), and one `up` of them with a short run keeps it to about two
//! minutes here. `#[ignore]`d like the plain one (scripts/test runs it after the other
//! tests), in the `compose-containers` group (`compose::` tests).

use super::{Down, common, compose, docker, no_compose_cluster_yet, ok, ran_well, root, timed};
use crate::secure::files_holding;
use lockbench_compose::file::{address, topology};
use std::path::Path;
use std::process::Command;

/// What a plaintext client of `server` gets for `request`: `None` when the exchange fails
/// (refused, reset, no complete answer), else the bytes.
fn plaintext(rt: &tokio::runtime::Runtime, server: &str, request: &[u8]) -> Option<Vec<u8>> {
    let spec = lockbench_cluster::by_name(server).unwrap();
    let addr = format!("{}:{}", address(spec), topology().client_port(spec));
    let ex = lockbench_core::Exchange {
        addr,
        request: request.to_vec(),
        complete: |r| r.ends_with(b"\r\n") || r.ends_with(b"}"),
    };
    rt.block_on(lockbench_cluster::exchange(&ex)).ok()
}

/// `docker-compose -f docker-compose.yml -f compose/secure.yml <args>`, the profile in `dir`.
fn secure_compose(dir: &Path, args: &[&str]) -> Command {
    let mut all = vec![
        "-f",
        "docker-compose.yml",
        "-f",
        lockbench_compose::secure::OVERLAY,
    ];
    all.extend_from_slice(args);
    let mut cmd = compose(&all);
    cmd.env(lockbench_compose::secure::DIR_ENV, dir);
    cmd
}

#[test]
#[ignore = "owns the compose cluster's containers and is heavy; scripts/test runs it after the other tests"]
fn the_secure_compose_cluster_takes_only_tls_and_a_run_connects_by_itself() {
    no_compose_cluster_yet();
    timed("scripts/build-images --servers", || {
        ok(Command::new(root().join("scripts/build-images")).arg("--servers"))
    });
    let dir = common::scratch("compose", "secure");
    let secrets = dir.join("secrets");
    let init = ok(Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("compose-secure-init")
        .arg(&secrets));
    let profile = secrets.join("secure");
    let password = std::fs::read_to_string(profile.join("password")).unwrap();
    let admin = std::fs::read_to_string(profile.join("admin-password")).unwrap();
    let (password, admin) = (password.trim(), admin.trim());
    assert_eq!(password.len(), 64, "32 random bytes in hex");
    assert!(!init.contains(password) && !init.contains(admin));

    let _down = Down;
    timed("compose up with compose/secure.yml (until healthy)", || {
        ok(&mut secure_compose(&secrets, &["up", "-d"]))
    });

    // TLS only: a plaintext PING, `GET /health` or `srvr` gets no answer of the protocol.
    let rt = tokio::runtime::Runtime::new().unwrap();
    for server in ["redis", "redlock1", "sen1"] {
        let r = plaintext(&rt, server, b"*1\r\nPING\r\n");
        assert!(
            !r.as_ref().is_some_and(|r| r.starts_with(b"+PONG")),
            "{server} answered a plaintext PING: {r:?}"
        );
    }
    let r = plaintext(&rt, "etcd1", b"GET /health HTTP/1.1\r\nHost: etcd\r\n\r\n");
    assert!(
        !r.as_ref()
            .is_some_and(|r| String::from_utf8_lossy(r).contains("\"health\"")),
        "etcd1 answered a plaintext /health: {r:?}"
    );
    let r = plaintext(&rt, "zk1", b"srvr\n");
    assert!(
        !r.as_ref()
            .is_some_and(|r| r.starts_with(b"Zookeeper version")),
        "zk1 answered a plaintext srvr: {r:?}"
    );

    let out_dir = dir.join("run");
    let out = timed(
        "lockbench run quick --cluster compose (secure, 4 backends)",
        || {
            Command::new(env!("CARGO_BIN_EXE_lockbench"))
                // Not --quiet: a backend's warnings (a ZooKeeper acquire that ended on an
                // unexpected error says which) belong in a failure's message, and every line
                // the terminal shows is checked for the passwords below.
                .args(["run", "quick", "--cluster", "compose", "--out"])
                .arg(&out_dir)
                .args([
                    "--set",
                    r#"backends=["zk-fair","etcd-lease","redis-setnx","redlock"]"#,
                    "--set",
                    "duration=3s",
                    "--set",
                    "warmup=0s",
                    "--set",
                    common::NO_WARM_UP,
                    // TLS handshakes are slow in a debug build (its crypto is unoptimized), and
                    // Redlock's node_timeout bounds every reply (the connection's set-up, AUTH,
                    // too, it seems); it drops a connection whose reply is late for a new one. The
                    // default 50 ms was too short on this loaded 2-core machine (every client
                    // reconnected forever: 0-2 acquisitions in 3 s, the runtime 1.3 s late), and
                    // 500 ms at a load average of 26 (no server answered the set-up in time).
                    "--set",
                    "redlock.node_timeout=2s",
                    "--set",
                    "workload.clients=4",
                ])
                .output()
                .unwrap()
        },
    );
    let said = common::text(&out);
    if !out.status.success() {
        // An unhealthy container's own last lines: the run names it, the log says why.
        let logs: Vec<String> = said
            .split("(container ")
            .skip(1)
            .filter_map(|rest| rest.split(')').next())
            .map(|c| {
                let log = Command::new("docker")
                    .args(["logs", "--tail", "30", c])
                    .output()
                    .map(|o| common::text(&o))
                    .unwrap_or_default();
                format!("docker logs {c}:\n{log}")
            })
            .collect();
        panic!("exit {:?}: {said}\n{}", out.status.code(), logs.join("\n"));
    }
    let r = common::results(&out_dir);
    assert_eq!(r["cluster"], "compose");
    for group in ["zookeeper", "etcd", "redis", "redlock"] {
        for field in ["tls", "mutual_tls", "auth"] {
            assert_eq!(r["connections"][group][field], true, "{group}.{field}: {r}");
        }
    }
    for backend in ["zk-fair", "etcd-lease", "redis-setnx", "redlock"] {
        ran_well(&r, backend);
    }
    let expectations = r["expectations"].as_array().expect("expectations");
    assert!(!expectations.is_empty(), "{r}");
    for exp in expectations {
        assert_eq!(exp["outcome"], "met", "{exp}");
    }

    // No password in the run, the terminal, or what Docker shows (commands, environment).
    for secret in [password, admin] {
        assert_eq!(files_holding(&out_dir, secret), Vec::<String>::new());
        assert!(!said.contains(secret), "the terminal shows a password");
    }
    let inspect = docker(&[
        "inspect",
        "lockbench-redis",
        "lockbench-sen1",
        "lockbench-etcd1",
    ]);
    assert!(inspect.contains("/lockbench-secure"), "{inspect}");
    assert!(!inspect.contains(password) && !inspect.contains(admin));

    timed("compose down -v", || {
        ok(&mut secure_compose(&secrets, &["down", "-v"]))
    });
    let left = docker(&["ps", "-a", "-q", "--filter", "name=^lockbench-"]);
    assert!(left.trim().is_empty(), "containers left: {left}");
    let left = docker(&["network", "ls", "-q", "--filter", "name=^lockbench$"]);
    assert!(left.trim().is_empty(), "network left: {left}");
    let left = docker(&["volume", "ls", "-q", "--filter", "name=^lockbench-data$"]);
    assert!(left.trim().is_empty(), "volume left: {left}");
    let _ = std::fs::remove_dir_all(&dir);
}
