//! lockbench as an image (issue 23 item 4): `docker-compose run --rm lockbench run quick` (the
//! compose file's `lockbench` service, on the image scripts/build-images made from this test's
//! own binary in the set-up) runs the quick suite from a container on the compose network,
//! reaching the servers at their container addresses, going through the Docker API for its
//! faults, and writes its results into the bind-mounted `results/`; the run's container is gone
//! afterwards (`--rm`).

use super::{common, compose, root};

/// The `lockbench` service's containers that exist now (one-off `run` containers included).
pub fn service_containers() -> String {
    super::docker(&[
        "ps",
        "-a",
        "-q",
        "--filter",
        "label=com.docker.compose.service=lockbench",
    ])
}

pub fn quick_runs_in_the_lockbench_service() {
    let name = format!("compose-image-test-{}", std::process::id());
    let host_dir = root().join("results").join(&name);
    let _ = std::fs::remove_dir_all(&host_dir);
    let out = compose(&[
        "run",
        "--rm",
        "-T",
        "lockbench",
        "run",
        "quick",
        "--quiet",
        "--out",
        &format!("results/{name}"),
    ])
    .output()
    .expect("run docker-compose");
    let text = common::text(&out);
    assert!(out.status.success(), "{text}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("compose: reaching the containers at their addresses on 10.78.0.0/24"),
        "lockbench in its container does not reach the container addresses: {text}"
    );
    assert!(
        stderr.contains(lockbench_compose::Access::Exec.describe()),
        "lockbench in its container does not go through the Docker API: {text}"
    );
    let r = common::results(&host_dir);
    assert_eq!(r["cluster"], "compose");
    for backend in [
        "zk-fair",
        "zk-curator",
        "etcd-lease",
        "etcd-lockapi",
        "redis-setnx",
        "redlock",
    ] {
        let x = super::ran_well(&r, backend);
        eprintln!(
            "compose test: in the lockbench image: {backend}: {} acq/s",
            x["throughput_per_s"].as_f64().unwrap()
        );
    }
    assert!(
        host_dir.join("report.html").exists(),
        "no report in the bind mount"
    );
    let left = service_containers();
    assert!(
        left.trim().is_empty(),
        "the run's container is left: {left}"
    );
    let _ = std::fs::remove_dir_all(&host_dir);
}
