//! What the API server would reject, or what could never reach a coordinator, is refused
//! before anything is written, with the flag to fix.

use crate::common::spec;
use lockbench_kube::spec::MAX_WORKERS;
use lockbench_kube::{Resources, WorkerSpec};

#[test]
fn a_coordinator_the_pods_cannot_reach_is_refused_with_the_fix() {
    for bad in [
        "127.0.0.1:7450",
        "localhost:7450",
        "0.0.0.0:7450",
        "[::1]:7450",
        "10.0.0.5",
        "10.0.0.5:0",
        "10.0.0.5:http",
        ":7450",
    ] {
        let s = WorkerSpec {
            coordinator: bad.into(),
            ..spec()
        };
        let e = s.check().unwrap_err();
        assert!(
            e.starts_with("--coordinator") && e.contains("e.g."),
            "{bad}: {e}"
        );
    }
    for good in ["10.0.0.5:7450", "coord.bench.svc:7450", "[fd00::5]:7450"] {
        let s = WorkerSpec {
            coordinator: good.into(),
            ..spec()
        };
        assert_eq!(s.check(), Ok(()), "{good}");
    }
}

#[test]
fn names_counts_and_quantities_the_api_server_would_reject_are_refused() {
    let bad = [
        WorkerSpec {
            workers: 0,
            ..spec()
        },
        WorkerSpec {
            workers: MAX_WORKERS + 1,
            ..spec()
        },
        WorkerSpec {
            name: "Lockbench".into(),
            ..spec()
        },
        WorkerSpec {
            name: "w-".into(),
            ..spec()
        },
        WorkerSpec {
            namespace: Some("a_b".into()),
            ..spec()
        },
        WorkerSpec {
            image: "a b".into(),
            ..spec()
        },
        WorkerSpec {
            resources: Resources {
                cpu_request: Some("half".into()),
                ..Resources::default()
            },
            ..spec()
        },
        WorkerSpec {
            resources: Resources {
                memory_limit: Some("1GB".into()),
                ..Resources::default()
            },
            ..spec()
        },
    ];
    for s in bad {
        assert!(s.check().is_err(), "{s:?}");
    }
    let fine = WorkerSpec {
        resources: Resources {
            cpu_request: Some("500m".into()),
            memory_request: Some("256Mi".into()),
            cpu_limit: Some("1.5".into()),
            memory_limit: Some("1Gi".into()),
        },
        ..spec()
    };
    assert_eq!(fine.check(), Ok(()));
}
