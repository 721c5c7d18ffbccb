//! `lockbench k8s-manifests`: writes a run's remote workers as Kubernetes manifests (a Secret
//! and an Indexed Job, `lockbench_kube`) and says what to run on each side.
//!
//! Why a command of its own rather than a launcher: lockbench holds no cluster credentials and
//! calls no Kubernetes API; the user applies the files with their own `kubectl`. The secret is
//! generated here, written only to the two files (mode 0600) and never printed.

use lockbench_kube::{Manifests, Resources, WorkerSpec};
use lockbench_workloads::dial::RunSecret;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `lockbench k8s-manifests`.
#[derive(Debug, clap::Args)]
pub struct K8sManifestsArgs {
    /// Workers: the Indexed Job's `completions` and `parallelism`.
    #[arg(long, value_name = "N")]
    pub workers: u32,
    /// The coordinator's `host:port`, as the pods reach it.
    ///
    /// Not a loopback address.
    #[arg(long, value_name = "HOST:PORT")]
    pub coordinator: String,
    /// The container image with `lockbench` on its PATH.
    ///
    /// For example lockbench/lockbench:local from scripts/build-images, pushed to a registry
    /// the cluster pulls from.
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// Create this namespace and put the Secret and the Job in it.
    ///
    /// Without it, they go to kubectl's current namespace.
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// The Job's name.
    ///
    /// The Secret is `<name>-secret`.
    #[arg(long, default_value = "lockbench-workers")]
    pub name: String,
    /// Spread the workers evenly over zones.
    ///
    /// By `topology.kubernetes.io/zone`: at most one more in any zone than in another; they are always spread over nodes as far
    /// as the scheduler can.
    #[arg(long)]
    pub zones: bool,
    /// Each worker's CPU request (`500m`, `2`).
    ///
    /// A Kubernetes quantity.
    #[arg(long, value_name = "QUANTITY")]
    pub cpu_request: Option<String>,
    /// Each worker's memory request (`256Mi`, `1Gi`).
    #[arg(long, value_name = "QUANTITY")]
    pub memory_request: Option<String>,
    /// Each worker's CPU limit.
    #[arg(long, value_name = "QUANTITY")]
    pub cpu_limit: Option<String>,
    /// Each worker's memory limit.
    #[arg(long, value_name = "QUANTITY")]
    pub memory_limit: Option<String>,
    /// How long a worker keeps dialling.
    ///
    /// A coordinator may not listen yet when the pods start.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    pub patience: Duration,
    /// Failed pods the Job replaces before it gives up.
    #[arg(long, default_value_t = 1)]
    pub backoff_limit: u32,
    /// Where to write `workers.yaml` and `worker-secret.env`.
    ///
    /// Created if missing; earlier files there are replaced, with a new secret.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Writes the manifests and prints the guide.
pub fn run(args: K8sManifestsArgs) -> anyhow::Result<ExitCode> {
    let spec = WorkerSpec {
        workers: args.workers,
        coordinator: args.coordinator,
        image: args.image,
        namespace: args.namespace,
        name: args.name,
        zones: args.zones,
        resources: Resources {
            cpu_request: args.cpu_request,
            memory_request: args.memory_request,
            cpu_limit: args.cpu_limit,
            memory_limit: args.memory_limit,
        },
        patience: args.patience,
        backoff_limit: args.backoff_limit,
    };
    let secret = RunSecret::generate();
    let manifests = Manifests::build(&spec, &secret).map_err(anyhow::Error::msg)?;
    let written = lockbench_kube::write::write(
        &args.out,
        &manifests,
        &lockbench_kube::secret::env_file(&secret),
    )
    .map_err(anyhow::Error::msg)?;
    print!("{}", lockbench_kube::guide::guide(&spec, &written));
    Ok(ExitCode::SUCCESS)
}
