//! The run's secret as a Kubernetes Secret, which the Job's pods read into
//! `LOCKBENCH_WORKER_SECRET` (`secretKeyRef`), so the value is in no pod spec, command line or
//! `kubectl describe` output.

use crate::job::{labels, secret_name};
use crate::spec::WorkerSpec;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lockbench_workloads::dial::{RunSecret, SECRET_ENV};
use std::collections::BTreeMap;

/// The Secret holding `secret` under the key `LOCKBENCH_WORKER_SECRET` (hex, as the worker
/// reads it).
pub fn secret(spec: &WorkerSpec, secret: &RunSecret) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(secret_name(spec)),
            namespace: spec.namespace.clone(),
            labels: Some(labels(spec)),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        string_data: Some(BTreeMap::from([(
            SECRET_ENV.to_string(),
            secret.to_env_value(),
        )])),
        ..Secret::default()
    }
}

/// The namespace, when the user named one.
pub fn namespace(spec: &WorkerSpec) -> Option<Namespace> {
    let name = spec.namespace.clone()?;
    Some(Namespace {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/name".to_string(),
                "lockbench".to_string(),
            )])),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    })
}

/// The coordinator's side of the secret: a shell environment file
/// (`LOCKBENCH_WORKER_SECRET=...`), for `set -a; . FILE; set +a` before `lockbench run`.
pub fn env_file(secret: &RunSecret) -> String {
    format!(
        "# The run's worker secret (lockbench k8s-manifests): keep this file private.\n\
         {SECRET_ENV}={}\n",
        secret.to_env_value()
    )
}
