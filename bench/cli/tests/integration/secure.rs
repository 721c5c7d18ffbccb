//! A run against a cluster that takes only TLS and an ACL user, through an external
//! cluster file as a user writes one: relative certificate paths, the password in an
//! environment variable. The run records what it used (`connections` in `results.json`), and
//! **no file of the run directory** (the history decompressed), nor the terminal, holds the
//! password, even at `RUST_LOG=debug` with worker processes; a wrong password fails the backend
//! naming the setting, not the password.
//!
//! The server is a real `redis-server` this test starts on a free loopback port, TLS only
//! (`port 0`), with `lockbench_redis::secure`'s configuration and certificates from
//! `lockbench-certs`; no other test uses it, so it needs no test group.

use crate::common;
use lockbench_certs::Pki;
use lockbench_redis::secure::{ACL_RULES, ServerTls};
use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A TLS-only Redis with user `lockbench` / `password`, in `dir`; its TLS port.
fn start(dir: &Path, pki: &Pki, password: &str) -> (Server, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tls = ServerTls {
        ca: &pki.ca,
        cert: &pki.server_cert,
        key: &pki.server_key,
    };
    let secret = secrecy::SecretString::from(password.to_string());
    let mut conf =
        lockbench_redis::secure::config("127.0.0.1", port, 0, tls, "lockbench", &secret, ACL_RULES);
    conf.push_str(&format!(
        "save \"\"\nappendonly no\ndir {}\n",
        dir.display()
    ));
    let path = dir.join("redis.conf");
    std::fs::write(&path, conf).unwrap();
    let log = std::fs::File::create(dir.join("redis.log")).unwrap();
    let child = Command::new("redis-server")
        .arg(&path)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("redis-server is installed");
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    (server, port)
}

/// `lockbench run quick` of `redis-setnx` through two worker processes against the cluster
/// file in `dir`, with the password `password` in the environment; output and run directory.
fn run(dir: &Path, name: &str, password: &str) -> (Output, std::path::PathBuf) {
    let out_dir = dir.join(name);
    let cluster = format!("external:{}", dir.join("cluster.toml").display());
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["run", "quick", "--quiet", "--cluster", &cluster, "--out"])
        .arg(&out_dir)
        .args(["--set", "backends=[\"redis-setnx\"]"])
        .args(["--set", "duration=1s", "--set", "warmup=0s"])
        .args(["--set", common::NO_WARM_UP])
        .args(["--set", "workload.clients=2"])
        .args(["--set", "workload.processes=\"workers\""])
        .env("LB_TEST_SECURE_RUN_PASSWORD", password)
        .env("RUST_LOG", "debug")
        .output()
        .expect("run lockbench");
    (out, out_dir)
}

/// Every file under `dir` (recursively) that holds `secret`, the history read decompressed.
pub(crate) fn files_holding(dir: &Path, secret: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if !path.is_file() {
                continue; // a server's socket holds nothing
            }
            let bytes = std::fs::read(&path).unwrap();
            if String::from_utf8_lossy(&bytes).contains(secret) {
                found.push(path.display().to_string());
            }
        }
    }
    let history = dir.join(lockbench_core::history::file::FILE_NAME);
    if history.exists() && common::history_text(dir).contains(secret) {
        found.push("history (decompressed)".into());
    }
    found
}

#[test]
fn a_run_over_tls_with_an_acl_user_records_it_and_no_file_holds_the_password() {
    let dir = common::scratch("secure", "run");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let password = format!("pw-{}-Kd93", std::process::id());
    let (_server, port) = start(&dir, &pki, &password);
    std::fs::write(
        dir.join("cluster.toml"),
        format!(
            "[redis]\nendpoints = [\"127.0.0.1:{port}\"]\nuser = \"lockbench\"\n\
             password_env = \"LB_TEST_SECURE_RUN_PASSWORD\"\n\
             tls = {{ ca = \"certs/ca.pem\", cert = \"certs/client.pem\", key = \"certs/client.key\" }}\n"
        ),
    )
    .unwrap();

    let (out, run_dir) = run(&dir, "good", &password);
    assert!(out.status.success(), "{}", common::text(&out));
    let r = common::results(&run_dir);
    let redis = &r["connections"]["redis"];
    assert_eq!(redis["tls"], true, "{r}");
    assert_eq!(redis["mutual_tls"], true, "{r}");
    assert_eq!(redis["auth"], true, "{r}");
    let setnx = common::result_of(&r, "redis-setnx");
    assert!(setnx["acquisitions"].as_u64().unwrap() > 0, "{setnx}");
    assert_eq!(files_holding(&run_dir, &password), Vec::<String>::new());
    assert!(!common::text(&out).contains(&password));

    let wrong = format!("{password}-wrong");
    let (out, run_dir) = run(&dir, "wrong", &wrong);
    let said = common::text(&out);
    assert!(!out.status.success(), "{said}");
    let r = std::fs::read_to_string(run_dir.join("results.json")).unwrap_or_default();
    assert!(
        format!("{said}{r}").contains("redis.password_env"),
        "the error names the setting: {said}\n{r}"
    );
    assert!(!said.contains(&wrong), "{said}");
    assert_eq!(files_holding(&run_dir, &wrong), Vec::<String>::new());
}
