//! A run's manifests written to a temporary directory, as the command writes them.

use lockbench_kube::write::{self, Written};
use lockbench_kube::{Manifests, Resources, WorkerSpec};
use lockbench_workloads::dial::RunSecret;
use std::time::Duration;

/// Four workers dialling 10.0.0.5:7450 in namespace `bench`, spread over zones, with a CPU
/// request and a memory limit.
pub fn spec() -> WorkerSpec {
    WorkerSpec {
        workers: 4,
        coordinator: "10.0.0.5:7450".into(),
        image: "registry.example/lockbench:0.1".into(),
        namespace: Some("bench".into()),
        name: "lockbench-workers".into(),
        zones: true,
        resources: Resources {
            cpu_request: Some("500m".into()),
            memory_limit: Some("512Mi".into()),
            ..Resources::default()
        },
        patience: Duration::from_secs(300),
        backoff_limit: 1,
    }
}

/// `spec` written with a fresh secret: the directory (kept alive), what was written, the
/// secret's value.
pub fn write_out(spec: &WorkerSpec) -> (tempfile::TempDir, Written, String) {
    let dir = tempfile::tempdir().unwrap();
    let secret = RunSecret::generate();
    let manifests = Manifests::build(spec, &secret).unwrap();
    let env = lockbench_kube::secret::env_file(&secret);
    let written = write::write(&dir.path().join("out"), &manifests, &env).unwrap();
    (dir, written, secret.to_env_value())
}
