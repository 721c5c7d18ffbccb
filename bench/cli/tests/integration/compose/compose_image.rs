//! lockbench as an image: `docker-compose run --rm lockbench run chaos-quick`
//! (the compose file's `lockbench` service, on the image scripts/build-images made from this
//! test's own binary in the set-up) runs the chaos suite from a container on the compose
//! network, faults and client containers included, on [`SERVICE_BACKENDS`] (the other three
//! run on the host as a user who is not root, `compose_nonroot`: each of chaos-quick's
//! backends runs once in the compose test, which keeps it within CI's time; the whole suite in
//! the service was run by hand, see docs/docker.md): it reaches the servers at their container
//! addresses, goes through the Docker API for its faults, exits 0 with every expectation met
//! and writes its results into the bind-mounted `results/`; the run's container is gone
//! afterwards (`--rm`). The compose test runs it while the host cannot route to the compose
//! subnet (`compose_published`), as on Docker Desktop, where this service is the way to run
//! everything.

use super::{common, root};
use std::process::Command;

/// chaos-quick's backends the `lockbench` service runs in the compose test (the others:
/// [`super::compose_nonroot::HOST_BACKENDS`]).
pub const SERVICE_BACKENDS: [&str; 3] = ["zk-curator", "etcd-lockapi", "redlock"];

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

/// Runs chaos-quick on [`SERVICE_BACKENDS`] in the `lockbench` service with `compose` (how to invoke docker-compose
/// with these arguments) and checks what it did.
pub fn chaos_quick_runs_in_the_lockbench_service(compose: fn(&[&str]) -> Command) {
    let name = format!("compose-image-test-{}", std::process::id());
    let host_dir = root().join("results").join(&name);
    let _ = std::fs::remove_dir_all(&host_dir);
    let backends = format!("backends={}", SERVICE_BACKENDS.join(","));
    let out = compose(&[
        "run",
        "--rm",
        "-T",
        "lockbench",
        "run",
        "chaos-quick",
        "--set",
        &backends,
        "--quiet",
        "--out",
        &format!("results/{name}"),
    ])
    .output()
    .expect("run docker-compose");
    let text = common::text(&out);
    assert!(
        out.status.success(),
        "chaos-quick in the lockbench service did not exit 0: {text}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("EXPECTATIONS MET ("),
        "no EXPECTATIONS MET headline: {text}"
    );
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
    assert_eq!(r["complete"], true, "{text}");
    let mut kinds = std::collections::BTreeSet::new();
    let mut seen = Vec::new();
    for backend in SERVICE_BACKENDS {
        let x = common::result_of(&r, backend);
        assert_eq!(x["status"], "ok", "{backend}: {x}");
        assert!(
            x["acquisitions"].as_u64().unwrap() > 0,
            "{backend}: no acquisition: {x}"
        );
        // Every fault applied (Redlock's five servers have no leader to act on, as on every
        // cluster), the holder's pauses in its client container.
        for w in x["fault_windows"].as_array().cloned().unwrap_or_default() {
            let note = w["note"].as_str().unwrap_or_default();
            seen.push(format!(
                "{backend} {} at {} s: {note}",
                w["fault"], w["start_s"]
            ));
            if backend == "redlock" && note.contains("have no leader") {
                continue;
            }
            assert_eq!(w["applied"], true, "{backend}: not applied: {w}");
            kinds.insert(w["fault"].as_str().unwrap_or_default().to_string());
        }
    }
    for kind in ["pause", "partition", "link-delay"] {
        assert!(
            kinds.contains(kind),
            "no {kind} applied: {kinds:?}; the windows:\n{}",
            seen.join("\n")
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
