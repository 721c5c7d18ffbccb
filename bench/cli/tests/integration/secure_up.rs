//! The secure managed cluster (`lockbench up --secure`, issue 22): the Redis server and the etcd
//! members of a private secure cluster (its own state directory and network, `lb-sec-`,
//! `10.85.1.0/24`, so the shared cluster is untouched) take only mutual TLS and user
//! `lockbench`; the cluster's endpoints carry those settings (what `lockbench run` on the
//! managed cluster uses), and a run with them is safe, records TLS, mutual TLS and auth, and
//! leaves the password in no file of the run directory, nor in the cluster file, Redis's files
//! or the terminal; the chaos controller's leader lookup reaches the secured etcd members.
//! (etcd 3.4's write-ahead log holds the `user add` request as sent, password
//! included: etcd's data, not lockbench's, and documented.)

use crate::common::{self, PrivateCluster};
use crate::secure::files_holding;
use lockbench_registry::etcd::system::ETCD;
use lockbench_registry::redis::system::REDIS;
use std::process::Command;

#[test]
fn a_secure_managed_redis_takes_only_tls_and_its_user_and_a_run_connects_with_them() {
    let dir = common::scratch("secure_up", "run");
    let cluster = PrivateCluster::up_secure("sec", "10.85.1.0/24", &dir, &[REDIS, ETCD]);
    let state = cluster.cluster.state_dir().to_path_buf();
    assert!(cluster.cluster.is_secure());

    let conn = cluster.endpoints.connection("redis");
    let tls = conn
        .tls
        .as_ref()
        .expect("the secure cluster's redis group speaks TLS");
    assert!(tls.mutual() && tls.ca.is_some(), "{conn:?}");
    assert_eq!(conn.user.as_deref(), Some("lockbench"));
    let password_file = conn.password_file.clone().expect("a password file");
    let password = std::fs::read_to_string(&password_file).unwrap();
    let password = password.trim();
    assert_eq!(password.len(), 64, "32 random bytes in hex");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&password_file)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{}", password_file.display());

    // A plaintext client gets no answer: the client port is the TLS port (`port 0`).
    let addr = cluster.endpoints.get("redis")[0].clone();
    let ping = lockbench_core::Exchange {
        addr: addr.clone(),
        request: b"*1\r\nPING\r\n".to_vec(),
        complete: |r| r.ends_with(b"\r\n"),
    };
    let plain = cluster.rt.block_on(lockbench_cluster::exchange(&ping));
    assert!(
        !plain.as_ref().is_ok_and(|r| r.starts_with(b"+PONG")),
        "{addr} answered a plaintext PING: {plain:?}"
    );

    // The chaos controller's leader lookup (a `leader` fault's target) asks each member over
    // TLS with the client certificate, from inside its host: one etcd member leads.
    let site = lockbench_chaos::Managed::new(cluster.cluster.clone());
    let members = site.servers(ETCD);
    let leader = cluster
        .rt
        .block_on(lockbench_chaos::leader(&site, &members));
    let leader = leader.expect("the chaos controller finds the secure etcd's leader");
    assert!(members.iter().any(|m| m.name == leader), "{leader}");

    let out_dir = dir.join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args([
            "run",
            "quick",
            "--quiet",
            "--cluster",
            &cluster.arg,
            "--out",
        ])
        .arg(&out_dir)
        .args(["--set", "backends=[\"redis-setnx\",\"etcd-lease\"]"])
        .args(["--set", "duration=2s", "--set", "warmup=0s"])
        .env("RUST_LOG", "debug")
        .output()
        .expect("run lockbench");
    let said = common::text(&out);
    assert!(out.status.success(), "{said}");
    let r = common::results(&out_dir);
    for group in ["redis", "etcd"] {
        for field in ["tls", "mutual_tls", "auth"] {
            assert_eq!(r["connections"][group][field], true, "{group}.{field}: {r}");
        }
    }
    for backend in ["redis-setnx", "etcd-lease"] {
        let res = common::result_of(&r, backend);
        assert!(res["acquisitions"].as_u64().unwrap() > 0, "{res}");
    }
    assert!(cluster.endpoints.get("etcd")[0].starts_with("https://"));

    assert!(!said.contains(password), "the terminal shows the password");
    assert_eq!(files_holding(&out_dir, password), Vec::<String>::new());
    let cluster_file = std::fs::read_to_string(dir.join("cluster.toml")).unwrap();
    assert!(!cluster_file.contains(password), "{cluster_file}");
    // Redis's files (config, log) hold at most its hash.
    assert_eq!(
        files_holding(&state.join("cluster/redis"), password),
        Vec::<String>::new()
    );
}
