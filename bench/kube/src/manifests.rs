//! A run's objects together, as one multi-document YAML file and back.
//!
//! Written from the typed structs with serde; read back into the same structs by each
//! document's `kind`. [`crate::write`] reads every file it wrote this way and compares, so a
//! written manifest always parses as the API's types.

use crate::spec::WorkerSpec;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use lockbench_workloads::dial::RunSecret;
use serde::Deserialize;

/// Every object of one run's workers, in the order `kubectl apply` must create them.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifests {
    /// The namespace, when one was named.
    pub namespace: Option<Namespace>,
    /// The run's secret.
    pub secret: Secret,
    /// The workers.
    pub job: Job,
}

impl Manifests {
    /// The objects for `spec`'s workers with `secret` (`spec` checked first).
    pub fn build(spec: &WorkerSpec, secret: &RunSecret) -> Result<Manifests, String> {
        spec.check()?;
        Ok(Manifests {
            namespace: crate::secret::namespace(spec),
            secret: crate::secret::secret(spec, secret),
            job: crate::job::job(spec),
        })
    }

    /// One YAML document per object, `---` between them, the namespace first and the Job
    /// last (so `kubectl apply -f` creates what the Job's pods need before them).
    pub fn to_yaml(&self) -> Result<String, String> {
        let mut docs = Vec::new();
        if let Some(ns) = &self.namespace {
            docs.push(serde_norway::to_string(ns));
        }
        docs.push(serde_norway::to_string(&self.secret));
        docs.push(serde_norway::to_string(&self.job));
        let docs: Result<Vec<String>, _> = docs.into_iter().collect();
        let docs = docs.map_err(|e| format!("cannot write the manifests as YAML: {e}"))?;
        Ok(docs.iter().map(|d| format!("---\n{d}")).collect())
    }

    /// The objects of a multi-document YAML text as [`Manifests::to_yaml`] writes it: each
    /// document parsed as the type its `kind` names.
    pub fn from_yaml(text: &str) -> Result<Manifests, String> {
        let (mut namespace, mut secret, mut job) = (None, None, None);
        for (i, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
            let value = serde_norway::Value::deserialize(doc)
                .map_err(|e| format!("document {}: not YAML: {e}", i + 1))?;
            let kind = value
                .get("kind")
                .and_then(|k| k.as_str())
                .unwrap_or("")
                .to_string();
            let bad = |e: serde_norway::Error| format!("document {} ({kind}): {e}", i + 1);
            match kind.as_str() {
                "Namespace" => namespace = Some(serde_norway::from_value(value).map_err(bad)?),
                "Secret" => secret = Some(serde_norway::from_value(value).map_err(bad)?),
                "Job" => job = Some(serde_norway::from_value(value).map_err(bad)?),
                other => return Err(format!("document {}: unexpected kind {other:?}", i + 1)),
            }
        }
        Ok(Manifests {
            namespace,
            secret: secret.ok_or("no Secret document")?,
            job: job.ok_or("no Job document")?,
        })
    }
}
