//! The written YAML read back into `k8s-openapi`'s types, and the fields that matter checked
//! there: what a cluster would run.

use crate::common::{spec, write_out};
use k8s_openapi::api::core::v1::{Container, EnvVar, PodSpec};
use lockbench_kube::job::{INDEX_ANNOTATION, INDEX_ENV, NAME_EXPR, ZONE_KEY};
use lockbench_kube::{Manifests, WorkerSpec};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn read(path: &Path) -> (String, Manifests) {
    let text = std::fs::read_to_string(path).unwrap();
    let m = Manifests::from_yaml(&text).unwrap();
    (text, m)
}

fn pod(m: &Manifests) -> &PodSpec {
    let job = m.job.spec.as_ref().unwrap();
    job.template.spec.as_ref().unwrap()
}

fn container(m: &Manifests) -> &Container {
    &pod(m).containers[0]
}

fn env<'a>(c: &'a Container, name: &str) -> &'a EnvVar {
    let env = c.env.as_ref().unwrap();
    env.iter().find(|e| e.name == name).unwrap()
}

#[test]
fn the_job_is_indexed_with_n_pods_that_never_restart() {
    let (_dir, written, _) = write_out(&spec());
    let (_, m) = read(&written.manifests);
    let job = m.job.spec.as_ref().unwrap();
    assert_eq!(job.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((job.completions, job.parallelism), (Some(4), Some(4)));
    assert_eq!(job.backoff_limit, Some(1));
    assert_eq!(pod(&m).restart_policy.as_deref(), Some("Never"));
    assert_eq!(pod(&m).automount_service_account_token, Some(false));
    assert_eq!(m.job.metadata.name.as_deref(), Some("lockbench-workers"));
    let c = container(&m);
    assert_eq!(c.image.as_deref(), Some("registry.example/lockbench:0.1"));
    let resources = c.resources.as_ref().unwrap();
    assert_eq!(resources.requests.as_ref().unwrap()["cpu"].0, "500m");
    assert_eq!(resources.limits.as_ref().unwrap()["memory"].0, "512Mi");
    assert!(!resources.requests.as_ref().unwrap().contains_key("memory"));
}

#[test]
fn the_secret_comes_from_the_secret_and_the_index_from_the_pod() {
    let (_dir, written, value) = write_out(&spec());
    let (_, m) = read(&written.manifests);
    let c = container(&m);
    let secret = env(c, "LOCKBENCH_WORKER_SECRET");
    assert_eq!(secret.value, None, "never a literal value");
    let by_ref = secret.value_from.as_ref().unwrap().secret_key_ref.as_ref();
    let by_ref = by_ref.unwrap();
    assert_eq!(by_ref.name, "lockbench-workers-secret");
    assert_eq!(by_ref.key, "LOCKBENCH_WORKER_SECRET");
    assert_eq!(
        m.secret.metadata.name.as_deref(),
        Some("lockbench-workers-secret")
    );
    let data = m.secret.string_data.as_ref().unwrap();
    assert_eq!(data["LOCKBENCH_WORKER_SECRET"], value);
    let index = env(c, INDEX_ENV).value_from.as_ref().unwrap();
    let field = &index.field_ref.as_ref().unwrap().field_path;
    assert_eq!(
        field,
        &format!("metadata.annotations['{INDEX_ANNOTATION}']")
    );
    // Every object in the run's namespace, created first.
    assert_eq!(
        m.namespace.as_ref().unwrap().metadata.name.as_deref(),
        Some("bench")
    );
    assert_eq!(m.secret.metadata.namespace.as_deref(), Some("bench"));
    assert_eq!(m.job.metadata.namespace.as_deref(), Some("bench"));
}

#[test]
fn the_secret_is_only_in_the_secret_and_in_private_files() {
    let (_dir, written, value) = write_out(&spec());
    let (text, m) = read(&written.manifests);
    let job_yaml = serde_norway::to_string(&m.job).unwrap();
    assert!(!job_yaml.contains(&value), "the Job holds the secret");
    assert_eq!(text.matches(&value).count(), 1, "once, in the Secret");
    let env_file = std::fs::read_to_string(&written.secret_env).unwrap();
    assert!(env_file.contains(&format!("LOCKBENCH_WORKER_SECRET={value}\n")));
    for path in [&written.manifests, &written.secret_env] {
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }
    let guide = lockbench_kube::guide::guide(&spec(), &written);
    assert!(!guide.contains(&value), "the guide prints the secret");
    assert!(guide.contains(&format!("kubectl apply -f {}", written.manifests.display())));
}

#[test]
fn zones_spread_strictly_nodes_loosely_and_no_namespace_means_kubectls() {
    let (_dir, written, _) = write_out(&spec());
    let (_, m) = read(&written.manifests);
    let spread = pod(&m).topology_spread_constraints.as_ref().unwrap();
    let zone = spread.iter().find(|c| c.topology_key == ZONE_KEY).unwrap();
    assert_eq!(
        (zone.max_skew, zone.when_unsatisfiable.as_str()),
        (1, "DoNotSchedule")
    );
    let selector = zone
        .label_selector
        .as_ref()
        .unwrap()
        .match_labels
        .as_ref()
        .unwrap();
    let pod_labels = m.job.spec.as_ref().unwrap().template.metadata.as_ref();
    assert_eq!(
        Some(selector),
        pod_labels.unwrap().labels.as_ref(),
        "it selects the pods"
    );

    let plain = WorkerSpec {
        namespace: None,
        zones: false,
        ..spec()
    };
    let (_dir, files, _) = write_out(&plain);
    let (text, m) = read(&files.manifests);
    assert!(m.namespace.is_none() && !text.contains("kind: Namespace"));
    assert_eq!(m.job.metadata.namespace, None);
    let spread = pod(&m).topology_spread_constraints.as_ref().unwrap();
    assert!(
        spread.iter().all(|c| c.topology_key != ZONE_KEY),
        "{spread:?}"
    );
}

/// The container's command, run by a real `sh` with the index a pod gets and a stand-in
/// `lockbench` that prints its arguments: the worker's name is `client<index + 1>`, the
/// address and patience arrive as given.
#[test]
fn the_command_names_the_worker_from_its_index() {
    let (dir, written, _) = write_out(&spec());
    let (_, m) = read(&written.manifests);
    let command = container(&m).command.clone().unwrap();
    assert_eq!(&command[..2], ["sh", "-c"]);
    assert!(command[2].contains(NAME_EXPR));
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let stub = bin.join("lockbench");
    std::fs::write(&stub, "#!/bin/sh\necho \"$@\"\n").unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = Command::new(&command[0])
        .args(&command[1..])
        .env("PATH", path)
        .env(INDEX_ENV, "3")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "worker --coordinator 10.0.0.5:7450 --name client4 --patience 300s\n"
    );
}

/// The reader is alive: a document of the wrong shape or an unknown kind is an error, not
/// silently dropped.
#[test]
fn a_broken_manifest_does_not_read_back() {
    let (_dir, written, _) = write_out(&spec());
    let (text, _) = read(&written.manifests);
    let wrong_type = text.replace("completions: 4", "completions: four");
    let e = Manifests::from_yaml(&wrong_type).unwrap_err();
    assert!(e.contains("(Job)"), "{e}");
    let unknown = format!("{text}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n");
    assert!(
        Manifests::from_yaml(&unknown)
            .unwrap_err()
            .contains("ConfigMap")
    );
    let no_job = text[..text.find("kind: Job").unwrap()]
        .rsplit_once("---")
        .unwrap()
        .0;
    assert_eq!(Manifests::from_yaml(no_job).unwrap_err(), "no Job document");
}
