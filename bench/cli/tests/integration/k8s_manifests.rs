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
