//! A second reader: `kubectl`'s own decoding into the Kubernetes Go types, offline.
//!
//! `kubectl apply --dry-run=client` and `kubectl create --dry-run=client` both ask a server
//! for its API groups first, so with no cluster they fail ("connection refused"). `kubectl set
//! env --local -f FILE --list` does not: it decodes the file into the typed objects (a wrong
//! type is an error, exit 1) and lists each container's environment as Kubernetes resolves
//! it, with the source of each variable. kubectl is required (scripts/install-test-deps
//! installs Debian's kubernetes-client when none is on PATH); without it this fails.

use crate::common::{spec, write_out};
use std::path::Path;
use std::process::{Command, Output};

fn list_env(file: &Path) -> Output {
    Command::new("kubectl")
        .args(["set", "env", "--local", "--list", "-f"])
        .arg(file)
        .env("KUBECONFIG", "/dev/null")
        .output()
        .expect("kubectl must be installed (scripts/install-test-deps installs it)")
}

#[test]
fn kubectl_decodes_the_job_and_sees_the_secret_by_reference() {
    let (dir, written, value) = write_out(&spec());
    let out = list_env(&written.manifests);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout,
        "# Job lockbench-workers, container worker\n\
         # JOB_COMPLETION_INDEX from field path \
         metadata.annotations['batch.kubernetes.io/job-completion-index']\n\
         # LOCKBENCH_WORKER_SECRET from secret lockbench-workers-secret, key \
         LOCKBENCH_WORKER_SECRET\n"
    );
    assert!(!stdout.contains(&value));

    // The check is alive: a misspelt field and a wrong type are seen.
    let text = std::fs::read_to_string(&written.manifests).unwrap();
    let misspelt = dir.path().join("misspelt.yaml");
    std::fs::write(&misspelt, text.replace("secretKeyRef", "secretKeyReff")).unwrap();
    let out = list_env(&misspelt);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("LOCKBENCH_WORKER_SECRET from invalid"),
        "{out:?}"
    );
    let wrong = dir.path().join("wrong.yaml");
    std::fs::write(&wrong, text.replace("completions: 4", "completions: four")).unwrap();
    let out = list_env(&wrong);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unable to decode"),
        "{out:?}"
    );
}
