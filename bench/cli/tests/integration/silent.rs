//! Servers that accept connections but never answer: listening sockets
//! nobody reads from. The kernel completes every TCP handshake on its own, so a client that
//! only connects believes it is connected. Every lock backend must fail within seconds, naming
//! the address and what went unanswered, with a non-zero exit and no `valid` verdict; before,
//! Redis and Redlock ran their whole duration to "0 acq/s, safety ok", exit 0, and ZooKeeper
//! and etcd took 15-18 s to fail.
//!
//! No managed cluster is needed: the endpoints are this test's own loopback listeners.

use crate::common;

use crate::common::{result_of, results, text};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Generous on a loaded 2-core machine, far below the 20 s a silent Redis used to take.
const BOUND: Duration = Duration::from_secs(12);

#[test]
fn every_backend_fails_fast_naming_a_server_that_accepts_but_never_answers() {
    let dir = common::scratch("silent", "all");
    // Bound, listening, never accepted: connections complete in the backlog, nothing answers.
    let listeners: Vec<TcpListener> = (0..12)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a loopback listener"))
        .collect();
    let addr = |i: usize| listeners[i].local_addr().unwrap().to_string();
    let list = |r: std::ops::Range<usize>, scheme: &str| {
        r.map(|i| format!("\"{scheme}{}\"", addr(i)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let file = dir.join("cluster.toml");
    std::fs::write(
        &file,
        format!(
            "zookeeper = [{}]\netcd = [{}]\nredis = [{}]\nredlock = [{}]\n",
            list(0..3, ""),
            list(3..6, "http://"),
            list(6..7, ""),
            list(7..12, ""),
        ),
    )
    .unwrap();
    // (backend, the addresses its error may name, what went unanswered)
    let cases = [
        ("zk-fair", 0..3, "session"),
        ("zk-curator", 0..3, "session"),
        ("etcd-lease", 3..6, "lease grant"),
        ("etcd-lockapi", 3..6, "lease grant"),
        ("redis-setnx", 6..7, "PING"),
        ("redlock", 7..12, "PING"),
    ];
    // All six at once: each is bounded on its own, and the test stays short.
    let runs: Vec<_> = cases
        .iter()
        .map(|(backend, _, _)| {
            let out_dir = dir.join(backend);
            let child = Command::new(env!("CARGO_BIN_EXE_lockbench"))
                .args(["run", "quick", "--cluster"])
                .arg(format!("external:{}", file.display()))
                .arg("--out")
                .arg(&out_dir)
                .args(["--set", &format!("backends={backend}")])
                .args(["--set", common::NO_WARM_UP])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run lockbench");
            (Instant::now(), child, out_dir)
        })
        .collect();
    for ((backend, addresses, unanswered), (started, child, out_dir)) in cases.iter().zip(runs) {
        let out = child.wait_with_output().unwrap();
        let took = started.elapsed();
        let all = text(&out);
        assert!(took < BOUND, "{backend}: took {took:?}\n{all}");
        assert_eq!(out.status.code(), Some(2), "{backend}: {all}");
        assert!(
            addresses.clone().any(|i| all.contains(&addr(i))),
            "{backend}: the error names none of its servers: {all}"
        );
        assert!(
            all.contains(unanswered),
            "{backend}: the error does not say the {unanswered} went unanswered: {all}"
        );
        let r = results(&out_dir);
        let res = result_of(&r, backend);
        assert_eq!(res["status"], "error", "{backend}: {res}");
        assert_ne!(res["safety"]["verdict"], "valid", "{backend}: {res}");
        assert_eq!(res["acquisitions"], 0, "{backend}: {res}");
        eprintln!("{backend}: failed in {took:?}");
    }
    drop(listeners);
    let _ = std::fs::remove_dir_all(&dir);
}
