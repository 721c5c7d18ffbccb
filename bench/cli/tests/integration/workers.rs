//! `lockbench run --workers dial:N`: the run's clients in N workers that dial in over TCP with
//! the run's secret, on their own clocks, against the shared managed cluster. (Swarm's
//! launcher is tested in `swarm`, with the heavy Docker tests.)

use crate::common::{result_of, results, run_quietly, text};

/// Two workers share eight clients (slots spread round robin), every client acquires, the
/// merged histogram counts every measured acquisition, the result has a `clocks` section
/// with both workers' probes and bounds, and the verdicts are those of a local run: safe.
#[test]
fn a_quick_run_on_two_dialled_in_workers_is_judged_across_their_clocks() {
    let backends = ["zk-fair", "etcd-lease"];
    let (out, dir) = run_quietly(
        "workers",
        "dial",
        "quick",
        &[
            "workers.launcher=dial",
            "workers.count=2",
            "duration=2s",
            "warmup=500ms",
            "backends=zk-fair,etcd-lease",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("`dial` launcher"), "{said}");
    let r = results(&dir);
    for backend in backends {
        let b = result_of(&r, backend);
        assert_eq!(b["safety"]["verdict"], "valid", "{backend}: {b}");
        let per_client: Vec<u64> = b["per_client_acquisitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .collect();
        assert_eq!(per_client.len(), 8, "{backend}: {per_client:?}");
        assert!(
            per_client.iter().all(|&n| n > 0),
            "{backend}: {per_client:?}"
        );
        assert_eq!(
            b["acquire_latency_us"]["count"], b["acquisitions"],
            "{backend}: the merged histogram holds every measured acquisition"
        );
        let clocks = &b["clocks"];
        let workers = clocks["workers"].as_array().expect("a clocks section");
        let names: Vec<&str> = workers
            .iter()
            .map(|w| w["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["client1", "client2"], "{backend}: {clocks}");
        assert_eq!(workers[0]["slots"], serde_json::json!([0, 2, 4, 6]));
        assert_eq!(workers[1]["slots"], serde_json::json!([1, 3, 5, 7]));
        for w in workers {
            assert!(w["probes"].as_u64().unwrap() >= 1, "{backend}: {w}");
            assert!(w["offset_ms"].is_number(), "{backend}: {w}");
            let bound = w["bound_ms"].as_f64().unwrap();
            assert!(bound > 0.0 && bound < 1_000.0, "{backend}: {w}");
        }
        assert_eq!(
            clocks["judgement"]["overlaps_certain"], 0,
            "{backend}: {clocks}"
        );
        assert_eq!(
            clocks["judgement"]["lost_writes_certain"], 0,
            "{backend}: {clocks}"
        );
    }
}
