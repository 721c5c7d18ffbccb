//! What the user asks for, checked before anything is written: a manifest the API server would
//! reject, or workers that could never reach their coordinator, fail here with the flag to fix.

use std::net::IpAddr;
use std::time::Duration;

/// The workers of one run, as `lockbench k8s-manifests` was asked for them.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerSpec {
    /// How many workers (the Job's `completions` and `parallelism`).
    pub workers: u32,
    /// The coordinator's address as the pods reach it, `host:port`.
    pub coordinator: String,
    /// The container image holding `lockbench` on its `PATH`.
    pub image: String,
    /// The namespace to create and put the Secret and the Job in; `None`: kubectl's current one.
    pub namespace: Option<String>,
    /// The Job's name; the Secret is `<name>-secret`, every object is labelled with it.
    pub name: String,
    /// Spread the workers evenly over zones (`topology.kubernetes.io/zone`).
    pub zones: bool,
    /// CPU and memory requests and limits of each worker.
    pub resources: Resources,
    /// How long a worker keeps dialling a coordinator that does not listen yet (`--patience`).
    pub patience: Duration,
    /// Pod failures the Job retries before it gives up (`backoffLimit`).
    pub backoff_limit: u32,
}

/// Each worker's CPU and memory requests and limits, as Kubernetes quantities (`500m`, `1`,
/// `256Mi`); `None` leaves one unset.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resources {
    /// `requests.cpu`.
    pub cpu_request: Option<String>,
    /// `requests.memory`.
    pub memory_request: Option<String>,
    /// `limits.cpu`.
    pub cpu_limit: Option<String>,
    /// `limits.memory`.
    pub memory_limit: Option<String>,
}

/// The most workers one Job gets here: far more than one coordinator's network and cores serve,
/// and an Indexed Job's limit for `completions` is 100,000.
pub const MAX_WORKERS: u32 = 1000;

impl WorkerSpec {
    /// Every field checked; the error names the flag and how to fix it.
    pub fn check(&self) -> Result<(), String> {
        if self.workers == 0 || self.workers > MAX_WORKERS {
            return Err(format!(
                "--workers {}: give 1 to {MAX_WORKERS} workers",
                self.workers
            ));
        }
        check_coordinator(&self.coordinator)?;
        if self.image.is_empty() || self.image.contains(char::is_whitespace) {
            return Err(format!(
                "--image {:?}: give an image reference such as registry.example/lockbench:0.1",
                self.image
            ));
        }
        // `<name>-secret` must be a DNS-1123 label too, and pods are named `<name>-<index>-<hash>`.
        check_label("--name", &self.name, 40)?;
        if let Some(ns) = &self.namespace {
            check_label("--namespace", ns, 63)?;
        }
        let r = &self.resources;
        for (flag, q) in [
            ("--cpu-request", &r.cpu_request),
            ("--memory-request", &r.memory_request),
            ("--cpu-limit", &r.cpu_limit),
            ("--memory-limit", &r.memory_limit),
        ] {
            if let Some(q) = q {
                check_quantity(flag, q)?;
            }
        }
        Ok(())
    }
}

/// `host:port` that pods can dial: not a loopback or unspecified address, which would be each
/// pod itself.
fn check_coordinator(addr: &str) -> Result<(), String> {
    let fix = "give the address the pods reach the coordinator at, e.g. 10.0.0.5:7450 or \
               coordinator.example:7450";
    let Some((host, port)) = addr.rsplit_once(':') else {
        return Err(format!("--coordinator {addr:?} has no port: {fix}"));
    };
    if !port.parse::<u16>().is_ok_and(|p| p > 0) {
        return Err(format!(
            "--coordinator {addr:?}: {port:?} is not a port: {fix}"
        ));
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.is_empty() {
        return Err(format!("--coordinator {addr:?} has no host: {fix}"));
    }
    let local = match bare.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback() || ip.is_unspecified(),
        Err(_) => bare.eq_ignore_ascii_case("localhost"),
    };
    if local {
        return Err(format!(
            "--coordinator {addr:?} is each pod's own host, not the coordinator's: {fix}"
        ));
    }
    Ok(())
}

/// A DNS-1123 label of at most `max` characters: lower-case letters, digits and `-`, starting
/// and ending with a letter or digit.
fn check_label(flag: &str, value: &str, max: usize) -> Result<(), String> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{flag} {value:?}: give at most {max} lower-case letters, digits and '-', starting and \
             ending with a letter or digit (a Kubernetes DNS-1123 label)"
        ))
    }
}

/// A Kubernetes quantity: a decimal number and an optional suffix (`m`, `k`, `M`, `G`, `T`,
/// `P`, `E`, `Ki` ... `Ei`).
fn check_quantity(flag: &str, q: &str) -> Result<(), String> {
    const SUFFIXES: [&str; 14] = [
        "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T", "P", "E", "",
    ];
    let number = SUFFIXES.iter().find_map(|s| q.strip_suffix(s)).unwrap_or(q);
    let digits = number.replacen('.', "", 1);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        Ok(())
    } else {
        Err(format!(
            "{flag} {q:?} is not a Kubernetes quantity: give e.g. 500m or 2 (CPU), 256Mi or 1Gi \
             (memory)"
        ))
    }
}
