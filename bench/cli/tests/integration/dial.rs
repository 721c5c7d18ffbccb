//! `lockbench worker --coordinator`: the binary's side of dialling in (no servers: these
//! workers are refused or never given a job). The library's tests
//! (lockbench-workloads/tests/dial.rs) run jobs over the same transport.

use lockbench_workloads::dial::{Listener, RunSecret, SECRET_ENV};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn worker(addr: &str, secret: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockbench"));
    cmd.args([
        "worker",
        "--coordinator",
        addr,
        "--name",
        "client7",
        "--idle",
        "1s",
    ])
    .args(["--patience", "2s"])
    .env_remove(SECRET_ENV)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if let Some(s) = secret {
        cmd.env(SECRET_ENV, s);
    }
    cmd
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Without the secret the worker says which variable it needs, and does not dial.
#[test]
fn a_worker_without_the_secret_says_so() {
    let out = worker("127.0.0.1:9", None).output().unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out)
            .contains("neither LOCKBENCH_WORKER_SECRET nor LOCKBENCH_WORKER_SECRET_FILE is set"),
        "{}",
        stderr(&out)
    );
}

/// A coordinator's listener for `secret` on a free loopback port.
fn listen(rt: &tokio::runtime::Runtime, secret: &RunSecret) -> Listener {
    rt.block_on(Listener::bind(
        "127.0.0.1:0".parse().unwrap(),
        secret.clone(),
    ))
    .unwrap()
}

/// A worker with a wrong secret is refused: it exits saying so, the coordinator names its
/// address, and neither side prints either secret.
#[test]
fn a_worker_with_a_wrong_secret_is_refused_by_name_and_address() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let secret = RunSecret::generate();
    let mut listener = listen(&rt, &secret);
    let wrong = RunSecret::generate().to_env_value();
    let out = worker(&listener.local_addr().to_string(), Some(&wrong))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(said.contains("refused this worker: wrong secret"), "{said}");
    assert!(!said.contains(&wrong) && !said.contains(&secret.to_env_value()));
    assert!(
        rt.block_on(listener.next(Duration::from_millis(300)))
            .is_err()
    );
    let refused = listener.refused();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].starts_with("refused a worker from 127.0.0.1:")
            && refused[0].contains("\"client7\""),
        "{refused:?}"
    );
    assert!(!refused[0].contains(&wrong));
}

/// A worker admitted but given no job (the coordinator hung or went away) exits within its
/// idle limit, saying why.
#[test]
fn an_admitted_worker_without_a_job_exits_within_seconds() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let secret = RunSecret::generate();
    let mut listener = listen(&rt, &secret);
    let child = worker(
        &listener.local_addr().to_string(),
        Some(&secret.to_env_value()),
    )
    .spawn()
    .unwrap();
    let held = rt.block_on(listener.next(Duration::from_secs(20))).unwrap();
    assert_eq!(held.name, "client7");
    let since = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        since.elapsed() < Duration::from_secs(10),
        "{:?}",
        since.elapsed()
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("sent no job"), "{}", stderr(&out));
    drop(held);
}
