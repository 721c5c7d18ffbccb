//! The workers as an Indexed Job: `completions = parallelism = N` pods, each told its index
//! (`JOB_COMPLETION_INDEX`), each running `lockbench worker --coordinator ADDR --name
//! client<index + 1>` with the run's secret from the Secret.
//!
//! Why a Job and not a Deployment or StatefulSet: a worker runs once, for one run, and ends
//! when the coordinator says stop; a finished worker must stay finished (`restartPolicy:
//! Never`), not be restarted into a run that is over. An *Indexed* Job gives each pod a
//! stable index, 0 to N-1, so the coordinator's log names `worker-0` ... `worker-3` rather than
//! pod hashes, and a retried pod keeps its index.

use crate::spec::WorkerSpec;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodSpec, PodTemplateSpec,
    ResourceRequirements, SecretKeySelector, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use lockbench_workloads::dial::SECRET_ENV;
use std::collections::BTreeMap;

/// The variable an Indexed Job's pods carry their index in.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// Where the Job controller writes a pod's index (the source of [`INDEX_ENV`]).
pub const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// The zone label nodes carry (well-known; set by cloud providers).
pub const ZONE_KEY: &str = "topology.kubernetes.io/zone";
/// The node name label.
pub const HOST_KEY: &str = "kubernetes.io/hostname";

/// The labels every object of the run carries, and the pods' selector.
pub fn labels(spec: &WorkerSpec) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".into(), "lockbench".into()),
        ("app.kubernetes.io/component".into(), "worker".into()),
        ("app.kubernetes.io/instance".into(), spec.name.clone()),
    ])
}

/// The Secret's name: `<name>-secret`.
pub fn secret_name(spec: &WorkerSpec) -> String {
    format!("{}-secret", spec.name)
}

/// The name a worker gives the coordinator: `client<index + 1>`, as the coordinator numbers
/// the workers it waits for (`client1` ... `client<N>`), computed by the pod's shell from its
/// index.
pub const NAME_EXPR: &str = "client$((JOB_COMPLETION_INDEX + 1))";

/// The worker's command line: `sh -c` only to turn the index into a name (Kubernetes' own
/// `$(VAR)` expansion has no arithmetic); the coordinator's address and the patience are
/// positional parameters, so no value is ever parsed as shell. Nothing secret is on it: the
/// secret comes in the environment.
pub fn command(spec: &WorkerSpec) -> Vec<String> {
    let script = format!(
        "exec lockbench worker --coordinator \"$1\" --name \"{NAME_EXPR}\" --patience \"$2\""
    );
    vec![
        "sh".into(),
        "-c".into(),
        script,
        "lockbench-worker".into(),
        spec.coordinator.clone(),
        format!("{}s", spec.patience.as_secs()),
    ]
}

/// The Indexed Job of `spec`'s workers.
pub fn job(spec: &WorkerSpec) -> Job {
    let n = spec.workers as i32;
    Job {
        metadata: ObjectMeta {
            name: Some(spec.name.clone()),
            namespace: spec.namespace.clone(),
            labels: Some(labels(spec)),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(n),
            parallelism: Some(n),
            backoff_limit: Some(spec.backoff_limit as i32),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(spec)),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod(spec)),
            },
            ..JobSpec::default()
        }),
        status: None,
    }
}

fn pod(spec: &WorkerSpec) -> PodSpec {
    PodSpec {
        restart_policy: Some("Never".into()),
        // A worker talks to its coordinator and the lock servers, never the Kubernetes API.
        automount_service_account_token: Some(false),
        topology_spread_constraints: Some(spread(spec)),
        containers: vec![Container {
            name: "worker".into(),
            image: Some(spec.image.clone()),
            command: Some(command(spec)),
            env: Some(env(spec)),
            resources: resources(spec),
            ..Container::default()
        }],
        ..PodSpec::default()
    }
}

/// The index (declared from the pod's annotation, which the Job controller also does on its
/// own since 1.22; declared here so the command finds it on any cluster) and the run's secret from the Secret.
fn env(spec: &WorkerSpec) -> Vec<EnvVar> {
    vec![
        EnvVar {
            name: INDEX_ENV.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!("metadata.annotations['{INDEX_ANNOTATION}']"),
                    ..ObjectFieldSelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        },
        EnvVar {
            name: SECRET_ENV.into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: secret_name(spec),
                    key: SECRET_ENV.into(),
                    optional: Some(false),
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        },
    ]
}

/// Workers spread over nodes as evenly as the scheduler can (one host's cores and NIC are what
/// remote workers are for), and with `--zones` over zones strictly: at most one more worker in
/// any zone than in another.
fn spread(spec: &WorkerSpec) -> Vec<TopologySpreadConstraint> {
    let selector = LabelSelector {
        match_labels: Some(labels(spec)),
        ..LabelSelector::default()
    };
    let constraint = |key: &str, when: &str| TopologySpreadConstraint {
        max_skew: 1,
        topology_key: key.into(),
        when_unsatisfiable: when.into(),
        label_selector: Some(selector.clone()),
        ..TopologySpreadConstraint::default()
    };
    let mut out = vec![constraint(HOST_KEY, "ScheduleAnyway")];
    if spec.zones {
        out.push(constraint(ZONE_KEY, "DoNotSchedule"));
    }
    out
}

fn resources(spec: &WorkerSpec) -> Option<ResourceRequirements> {
    let r = &spec.resources;
    let map = |cpu: &Option<String>, memory: &Option<String>| {
        let m: BTreeMap<String, Quantity> = [("cpu", cpu), ("memory", memory)]
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), Quantity(v.clone()?))))
            .collect();
        (!m.is_empty()).then_some(m)
    };
    let requests = map(&r.cpu_request, &r.memory_request);
    let limits = map(&r.cpu_limit, &r.memory_limit);
    (requests.is_some() || limits.is_some()).then(|| ResourceRequirements {
        requests,
        limits,
        ..ResourceRequirements::default()
    })
}
