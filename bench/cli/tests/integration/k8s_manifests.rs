//! `lockbench k8s-manifests`: the binary writes the two private files, prints the kubectl and
//! coordinator steps without the secret, and refuses a coordinator address the pods could not
//! reach before writing anything. (The manifests' fields: bench/kube's tests.)

use crate::common::scratch;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn k8s_manifests(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("k8s-manifests")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn writes_private_files_and_prints_the_steps_but_never_the_secret() {
    let dir = scratch("k8s", "writes");
    let out_dir = dir.join("manifests");
    let out = k8s_manifests(&[
        "--workers",
        "3",
        "--coordinator",
        "10.0.0.5:7450",
        "--image",
        "registry.example/lockbench:0.1",
        "--namespace",
        "bench",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let env = std::fs::read_to_string(out_dir.join("worker-secret.env")).unwrap();
    let secret = env
        .lines()
        .find_map(|l| l.strip_prefix("LOCKBENCH_WORKER_SECRET="))
        .unwrap();
    assert_eq!(secret.len(), 64, "32 bytes, hex");
    assert!(!stdout.contains(secret) && !String::from_utf8_lossy(&out.stderr).contains(secret));
    for file in ["workers.yaml", "worker-secret.env"] {
        let meta = std::fs::metadata(out_dir.join(file)).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{file}");
    }
    let manifests = out_dir.join("workers.yaml");
    assert!(
        stdout.contains(&format!("kubectl apply -f {}", manifests.display())),
        "{stdout}"
    );
    assert!(stdout.contains("kubectl -n bench get pods"), "{stdout}");
    let yaml = std::fs::read_to_string(&manifests).unwrap();
    assert!(yaml.contains("completionMode: Indexed") && yaml.contains("completions: 3"));

    // A second run replaces both files with a new secret.
    let again = k8s_manifests(&[
        "--workers",
        "3",
        "--coordinator",
        "10.0.0.5:7450",
        "--image",
        "img",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(again.status.success(), "{again:?}");
    let env2 = std::fs::read_to_string(out_dir.join("worker-secret.env")).unwrap();
    assert_ne!(env, env2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_coordinator_on_the_pods_own_loopback_is_refused_before_anything_is_written() {
    let dir = scratch("k8s", "loopback");
    let out_dir = dir.join("manifests");
    let out = k8s_manifests(&[
        "--workers",
        "2",
        "--coordinator",
        "127.0.0.1:7450",
        "--image",
        "img",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--coordinator \"127.0.0.1:7450\" is each pod's own host"),
        "{stderr}"
    );
    assert!(!out_dir.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What a pod would run, run here: the Job's container command in a real `sh`, this build's
/// `lockbench` on its PATH, `JOB_COMPLETION_INDEX=2`, and `LOCKBENCH_WORKER_SECRET` taken
/// from the Secret the way the container's `secretKeyRef` names it. Only the coordinator's
/// address (the command's first positional parameter, checked to be the one given) is
/// replaced by a listener on loopback. The worker proves the secret and is admitted as
/// `client3`.
#[test]
fn the_pods_command_and_secret_get_a_real_worker_admitted_by_its_index() {
    use lockbench_workloads::dial::{Listener, RunSecret};
    use std::time::{Duration, Instant};
    let dir = scratch("k8s", "admitted");
    let out_dir = dir.join("manifests");
    let out = k8s_manifests(&[
        "--workers",
        "4",
        "--coordinator",
        "10.0.0.5:7450",
        "--image",
        "img",
        "--patience",
        "20s",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let yaml = std::fs::read_to_string(out_dir.join("workers.yaml")).unwrap();
    let m = lockbench_kube::Manifests::from_yaml(&yaml).unwrap();
    let pod = m.job.spec.unwrap().template.spec.unwrap();
    let container = &pod.containers[0];
    let mut command = container.command.clone().unwrap();
    let env = container.env.clone().unwrap();
    let by_ref = env
        .iter()
        .find_map(|e| e.value_from.as_ref()?.secret_key_ref.clone())
        .unwrap();
    assert_eq!(
        m.secret.metadata.name.as_deref(),
        Some(by_ref.name.as_str())
    );
    let secret = m.secret.string_data.unwrap()[&by_ref.key].clone();

    let rt = tokio::runtime::Runtime::new().unwrap();
    let run_secret = RunSecret::from_env_value(&secret).unwrap();
    let mut listener = rt
        .block_on(Listener::bind("127.0.0.1:0".parse().unwrap(), run_secret))
        .unwrap();
    assert_eq!(command[4], "10.0.0.5:7450");
    command[4] = listener.local_addr().to_string();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_lockbench"))
        .parent()
        .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .env_clear()
        .env("PATH", path)
        .env("JOB_COMPLETION_INDEX", "2")
        .env(&by_ref.key, &secret)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let arrived = rt.block_on(listener.next(Duration::from_secs(20)));
    // Its connection closes here (the arrival is dropped), which ends the worker; it must not
    // outlive the test either way.
    let name = arrived.map(|a| a.name);
    let since = Instant::now();
    while child.try_wait().unwrap().is_none() && since.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if child.try_wait().unwrap().is_none() {
        child.kill().unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        name.as_deref(),
        Ok("client3"),
        "{out:?}; refused: {:?}",
        listener.refused()
    );
    assert!(listener.refused().is_empty(), "{:?}", listener.refused());
    assert!(!String::from_utf8_lossy(&out.stderr).contains(&secret));
    std::fs::remove_dir_all(&dir).unwrap();
}
