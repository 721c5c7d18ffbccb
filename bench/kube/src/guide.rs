//! What `lockbench k8s-manifests` prints after writing: the two sides of the run, in order.
//! Never the secret: the files hold it, the text names the files.

use crate::spec::WorkerSpec;
use crate::write::Written;

/// The instructions for `spec`'s workers written to `written`.
pub fn guide(spec: &WorkerSpec, written: &Written) -> String {
    let manifests = written.manifests.display();
    let env = written.secret_env.display();
    let ns = spec
        .namespace
        .as_ref()
        .map(|n| format!(" -n {n}"))
        .unwrap_or_default();
    let selector = format!("app.kubernetes.io/instance={}", spec.name);
    let (_, port) = spec.coordinator.rsplit_once(':').unwrap_or(("", "7450"));
    format!(
        "wrote {manifests} (mode 0600: it holds the Secret; an Indexed Job of {n} workers, image \
         {image}, dialling {coord})\n\
         wrote {env} (mode 0600: the same secret for the coordinator)\n\
         \n\
         1. On the coordinator, reachable from the pods at {coord}:\n\
         \x20    set -a; . {env}; set +a\n\
         \x20    lockbench run SCENARIO --workers external:{n} --listen 0.0.0.0:{port}\n\
         \x20  (it waits up to 5 min for client1 ... client{n}, then says which came)\n\
         2. Start the workers (each keeps dialling for {patience} s until the coordinator \
         listens):\n\
         \x20    kubectl apply -f {manifests}\n\
         \x20    kubectl{ns} get pods -l {selector} -o wide\n\
         \x20    kubectl{ns} logs -l {selector} --prefix --max-log-requests {n}\n\
         3. When the run has ended (the workers exit, the Job completes):\n\
         \x20    kubectl delete -f {manifests}\n",
        n = spec.workers,
        image = spec.image,
        coord = spec.coordinator,
        patience = spec.patience.as_secs(),
    )
}
