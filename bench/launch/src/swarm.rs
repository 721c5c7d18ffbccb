//! `launcher = "swarm"`: the workers as the tasks of a Docker Swarm service, one task per
//! worker, `{{.Task.Slot}}` as its index (`LOCKBENCH_WORKER_NAME=client{{.Task.Slot}}`).
//!
//! Choices, and why:
//! - **The engine's own swarm.** When the engine is in none, `docker swarm init` (advertising
//!   127.0.0.1: one node, nothing to reach from outside), and `docker swarm leave --force` at
//!   the end, only then. A swarm lockbench did not make is left as it was.
//! - **The image is local and never resolved at a registry** (`--no-resolve-image`):
//!   `lockbench/lockbench:local` from `scripts/build-images --lockbench` (or
//!   `LOCKBENCH_SWARM_IMAGE`). On one node the running `lockbench` is bind-mounted over the
//!   image's, so the workers run exactly the coordinator's code (as compose's client
//!   containers do); `LOCKBENCH_CLIENT_BINARY=in-image` uses the image's own, which is what a
//!   swarm of several hosts needs (a bind mount's source must exist on every node).
//! - **The secret is a Docker secret**, mounted as a file in each task
//!   (`LOCKBENCH_WORKER_SECRET_FILE=/run/secrets/lockbench-worker-secret`), not an environment
//!   variable of the service: `docker service inspect` shows a service's environment to anyone
//!   who may talk to the engine, while a secret's value cannot be read back through the API.
//!   The value goes to `docker secret create` on its stdin, never on a command line.
//! - **A bridge network of the run's own where the servers can be reached from one, host
//!   networking elsewhere.** The tasks must reach the coordinator's listener and resource
//!   service and the servers. On the managed cluster (`netns` topology) the servers are on
//!   lockbench's own bridge, which the host routes to from Docker's bridge networks as from
//!   anywhere (Docker's FORWARD rules accept what leaves its bridges, and the answers), and
//!   the coordinator listens on that bridge's address: so the tasks get a swarm-scoped bridge
//!   network of their own (`docker network create --driver bridge --scope swarm`), and with it
//!   a network namespace each. That namespace is the worker's client host: a partition
//!   (`isolate = { nodes = ["client1"] }`) puts its DROP rules inside it (`nsenter
//!   --net=/proc/<pid>/ns/net iptables`, as for a compose client container; `docker exec -u 0`
//!   with `NET_ADMIN` when lockbench is not root) and is checked from inside, as for the
//!   managed cluster's client hosts. Compose's servers are on a Docker network that another
//!   Docker bridge is isolated from, and loopback servers are on the host's 127.0.0.1: there
//!   the tasks use the host's network (`--network host`), reach everything the coordinator
//!   does, and a partition of such a task is not applied (it would cut the host: its client
//!   host is unknown to the nemesis, and the partition names no such node).
//! - **A killed task is replaced by a standalone container** ([`Service::restart`]): Swarm
//!   cannot start one task again under its slot, so `docker run` of the same image and
//!   command under the task's worker name, on the same network (created `--attachable` for
//!   it), with the secret as a read-only file mount (root's only, removed at the end): a
//!   Docker secret is for services only.
//! - **Nothing outlives the run**: the service (`--restart-condition none`, so a killed task
//!   stays dead and Swarm does not start another one under the run), replacement containers,
//!   its secret, its network and the swarm (when lockbench made it) are removed at the end,
//!   on an error and after Ctrl-C or SIGTERM (the run ends normally then); the partition
//!   rules go with the task's namespace. A `kill -9` of lockbench leaves them; the next Swarm
//!   run (and `lockbench down`) removes them (`crate::leftovers`): they carry the label
//!   `lockbench.workers=<pid>-<random>` and the coordinator's pid namespace.

use crate::Process;
use crate::leftovers::{PIDNS_LABEL, SWARM_LABEL};
use anyhow::Context;
use lockbench_cluster::Host;
use lockbench_workloads::dial::{RunSecret, SECRET_FILE_ENV};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The image the tasks run unless `LOCKBENCH_SWARM_IMAGE` names another.
pub(crate) const IMAGE: &str = "lockbench/lockbench:local";
/// The label on everything a run creates (value: the run's id).
pub(crate) const LABEL: &str = "lockbench.workers";
/// Where the secret file is mounted in a task.
const SECRET_TARGET: &str = "lockbench-worker-secret";
/// Where the running `lockbench` is mounted in a task (the image's entrypoint).
const BINARY: &str = "/usr/local/bin/lockbench";

/// A running service and what to remove with it.
pub(crate) struct Service {
    name: String,
    /// The tasks' bridge network (`None`: host networking).
    network: Option<String>,
    /// Each task's client host (its container's network namespace), as found by
    /// [`Service::process`]; empty with host networking.
    hosts: std::sync::Mutex<Vec<Host>>,
    /// What a replacement for a killed task needs: the same command line, network and secret.
    task: TaskSpec,
    /// Replacement containers by worker index (the newest).
    replaced: std::sync::Mutex<BTreeMap<u32, String>>,
    /// What [`Removal::remove`] removes, at the end, on an error and on drop.
    removal: Removal,
}

/// How a task is started, kept to start a replacement for a killed one.
struct TaskSpec {
    image: String,
    coordinator: SocketAddr,
    secret: RunSecret,
    /// `lockbench.workers=<id>`.
    label: String,
    /// `lockbench.pidns=<inode>`.
    pidns_label: String,
    /// `--network` of the tasks: theirs, or `host`.
    network: String,
    /// Arguments both a task and a replacement get: capabilities, passed-through environment,
    /// the binary's mount.
    common: Vec<String>,
}

/// Everything a run created, removed once ([`Removal::remove`]).
#[derive(Clone)]
struct Removal {
    name: String,
    secret: String,
    network: Option<String>,
    /// `lockbench.workers=<id>`: replacement containers carry it.
    label: String,
    /// The directory holding the secret file replacements mount (created on the first one).
    secret_dir: std::path::PathBuf,
    /// This run ran `docker swarm init`.
    initialised: bool,
    removed: Arc<AtomicBool>,
}

/// `docker ARGS`, its stdout trimmed, or an error naming the command and its stderr.
pub(super) fn docker(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context(
            "cannot run docker (a Docker Engine and its client are needed for swarm workers)",
        )?;
    if !out.status.success() {
        anyhow::bail!(
            "`docker {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// How long a removed network may stay listed: on an engine that was a swarm manager before
/// the run (so the run does not leave the swarm), `docker network rm` of a swarm-scoped network
/// returns at once and the node's copy goes a little later, once its agent catches up.
const NETWORK_GONE_WITHIN: Duration = Duration::from_secs(60);

/// Removes network `name` and waits, up to [`NETWORK_GONE_WITHIN`], until the engine no longer
/// lists it, so "nothing left" holds when the run ends and not only some time after.
pub(super) fn remove_network(name: &str) -> anyhow::Result<()> {
    docker(&["network", "rm", name])?;
    let deadline = Instant::now() + NETWORK_GONE_WITHIN;
    while docker(&["network", "inspect", "--format", "{{.Id}}", name]).is_ok() {
        if Instant::now() > deadline {
            anyhow::bail!(
                "network {name} is still listed {}s after `docker network rm` (the engine \
                 removes it on its own; check `docker network ls`)",
                NETWORK_GONE_WITHIN.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Ok(())
}

/// Creates Docker secret `name` holding `secret`, which goes on docker's stdin.
fn create_secret(name: &str, secret: &RunSecret, labels: &[&str]) -> anyhow::Result<()> {
    let mut child = Command::new("docker")
        .arg("secret")
        .arg("create")
        .args(labels.iter().flat_map(|l| ["--label", l]))
        .args([name, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run docker secret create")?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(secret.to_env_value().as_bytes())
        .context("cannot hand the run's secret to docker secret create")?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        anyhow::bail!(
            "swarm workers: `docker secret create {name}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

async fn docker_async(args: Vec<String>) -> anyhow::Result<String> {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        docker(&args)
    })
    .await?
}

impl Service {
    /// Joins or makes a swarm, creates the secret and the service of `count` tasks.
    pub(crate) async fn start(
        count: u32,
        coordinator: SocketAddr,
        secret: &RunSecret,
        bridged: bool,
    ) -> anyhow::Result<Service> {
        let secret = secret.clone();
        tokio::task::spawn_blocking(move || {
            Service::start_blocking(count, coordinator, &secret, bridged)
        })
        .await?
    }

    fn start_blocking(
        count: u32,
        coordinator: SocketAddr,
        secret: &RunSecret,
        bridged: bool,
    ) -> anyhow::Result<Service> {
        let image = std::env::var("LOCKBENCH_SWARM_IMAGE").unwrap_or_else(|_| IMAGE.into());
        docker(&["image", "inspect", "--format", "{{.Id}}", &image]).map_err(|_| {
            anyhow::anyhow!(
                "swarm workers: no image {image} in this Docker Engine (it is never pulled); \
                 build it with `scripts/build-images --lockbench`, or name another with \
                 LOCKBENCH_SWARM_IMAGE"
            )
        })?;
        let state = docker(&["info", "--format", "{{.Swarm.LocalNodeState}}"])?;
        let id = format!("{}-{:08x}", std::process::id(), rand::random::<u32>());
        let ns = crate::leftovers::pidns();
        let owned = |node: &str| {
            docker(&[
                "node",
                "update",
                "--label-add",
                &format!("{SWARM_LABEL}={id}"),
                "--label-add",
                &format!("{PIDNS_LABEL}={ns}"),
                node,
            ])
            .map(|_| ())
        };
        let initialised = match state.as_str() {
            "inactive" => {
                eprintln!(
                    "lockbench: swarm: this Docker Engine is in no swarm: `docker swarm init` \
                     (left again at the end of the run)"
                );
                docker(&["swarm", "init", "--advertise-addr", "127.0.0.1"])?;
                // Marked as this run's, so that after a `kill -9` the next run leaves it.
                let node = docker(&["info", "--format", "{{.Swarm.NodeID}}"])?;
                if let Err(e) = owned(&node) {
                    tracing::warn!(error = %e, "cannot label the swarm's node as this run's");
                }
                true
            }
            "active" => {
                if docker(&["info", "--format", "{{.Swarm.ControlAvailable}}"])? != "true" {
                    anyhow::bail!(
                        "swarm workers: this Docker Engine is a swarm worker node, not a \
                         manager; run lockbench where `docker service create` works"
                    );
                }
                let swept = crate::leftovers::sweep();
                if !swept.removed.is_empty() {
                    eprintln!(
                        "lockbench: swarm: removed what runs no longer alive left: {}",
                        swept.removed.join(", ")
                    );
                }
                match swept.orphan_swarm {
                    Some(node) => {
                        eprintln!(
                            "lockbench: swarm: the swarm was made by a run no longer alive: \
                             this run leaves it at its end"
                        );
                        owned(&node)?;
                        true
                    }
                    None => false,
                }
            }
            other => anyhow::bail!(
                "swarm workers: this Docker Engine's swarm state is `{other}`; `docker info` \
                 says more (a locked swarm needs `docker swarm unlock`)"
            ),
        };
        let label = format!("{LABEL}={id}");
        let pidns_label = format!("{PIDNS_LABEL}={ns}");
        let mut removal = Removal {
            name: format!("lockbench-workers-{id}"),
            secret: format!("lockbench-secret-{id}"),
            network: None,
            label: label.clone(),
            secret_dir: std::env::temp_dir().join(format!("lockbench-worker-secret-{id}")),
            initialised,
            removed: Arc::default(),
        };
        // From here on, dropping `removal` (or the service) removes what exists.
        create_secret(&removal.secret, secret, &[&label, &pidns_label])
            .inspect_err(|_| removal.remove())?;
        let network = if bridged {
            let name = format!("lockbench-net-{id}");
            // Attachable: a replacement for a killed task is a standalone container on it.
            let created = docker(&[
                "network",
                "create",
                "--driver",
                "bridge",
                "--scope",
                "swarm",
                "--attachable",
                "--label",
                &label,
                "--label",
                &pidns_label,
                &name,
            ]);
            if let Err(e) = created {
                removal.remove();
                return Err(e.context("swarm workers: cannot create the tasks' bridge network"));
            }
            removal.network = Some(name.clone());
            name
        } else {
            "host".to_string()
        };
        let mut common: Vec<String> = Vec::new();
        if bridged && !nix::unistd::geteuid().is_root() {
            // Partitions then go in through `docker exec -u 0 ... iptables`, which needs it.
            common.push("--cap-add".into());
            common.push("NET_ADMIN".into());
        }
        common.push("--env".into());
        common.push(format!("{SECRET_FILE_ENV}=/run/secrets/{SECRET_TARGET}"));
        for pass in ["LOCKBENCH_LOG", "RUST_LOG", "LOCKBENCH_TEST_CLOCK_SKEW"] {
            if let Ok(v) = std::env::var(pass) {
                common.push("--env".into());
                common.push(format!("{pass}={v}"));
            }
        }
        let in_image =
            std::env::var(lockbench_compose::clients::BINARY_ENV).is_ok_and(|v| v == "in-image");
        if !in_image {
            let exe = match std::env::current_exe() {
                Ok(exe) => exe,
                Err(e) => {
                    removal.remove();
                    return Err(anyhow::anyhow!("cannot find the lockbench binary: {e}"));
                }
            };
            common.push("--mount".into());
            common.push(format!(
                "type=bind,source={},target={BINARY},readonly",
                exe.display()
            ));
        }
        let service = Service {
            name: removal.name.clone(),
            network: removal.network.clone(),
            hosts: Default::default(),
            task: TaskSpec {
                image: image.clone(),
                coordinator,
                secret: secret.clone(),
                label: label.clone(),
                pidns_label: pidns_label.clone(),
                network: network.clone(),
                common,
            },
            replaced: Default::default(),
            removal,
        };
        let mut args: Vec<String> = [
            "service",
            "create",
            "--detach",
            "--quiet",
            "--name",
            &service.name,
            "--label",
            &label,
            "--container-label",
            &label,
            "--label",
            &pidns_label,
            "--container-label",
            &pidns_label,
            "--replicas",
            &count.to_string(),
            "--restart-condition",
            "none",
            "--stop-grace-period",
            "2s",
            "--no-resolve-image",
            "--network",
            &network,
            "--secret",
            &format!("source={},target={SECRET_TARGET}", service.removal.secret),
            "--env",
            "LOCKBENCH_WORKER_NAME=client{{.Task.Slot}}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(service.task.common.iter().cloned());
        args.push(image.clone());
        for a in ["worker", "--coordinator", &coordinator.to_string()] {
            args.push(a.into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        docker(&args).context("swarm workers: cannot create the service")?;
        eprintln!(
            "lockbench: swarm: service {} ({count} tasks of {image}, network {network}), \
             dialling {coordinator}",
            service.name
        );
        Ok(service)
    }

    /// Starts a replacement for task `index + 1`, killed: Swarm cannot start one task again
    /// under its slot (and `--restart-condition none` keeps it from starting one under the
    /// run), so it is a standalone container (`docker run`) with the task's worker name,
    /// image, command, network and capabilities, labelled like the run's other objects, its
    /// secret as a read-only file mount (a Docker secret is for services only; the file is
    /// only root's, in a directory only root's, removed at the end). Returns its name.
    pub(crate) async fn restart(&self, index: u32) -> anyhow::Result<String> {
        let generation = {
            let replaced = self.replaced.lock().expect("not poisoned");
            replaced.len() + 1
        };
        let name = format!("{}.{}.restart{generation}", self.name, index + 1);
        let file = self.removal.secret_file(&self.task.secret)?;
        let mut args: Vec<String> = [
            "run",
            "--detach",
            "--name",
            &name,
            "--label",
            &self.task.label,
            "--label",
            &self.task.pidns_label,
            "--network",
            &self.task.network,
            "--mount",
            &format!(
                "type=bind,source={},target=/run/secrets/{SECRET_TARGET},readonly",
                file.display()
            ),
            "--env",
            &format!("LOCKBENCH_WORKER_NAME={}", crate::worker_name(index)),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(self.task.common.iter().cloned());
        args.push(self.task.image.clone());
        for a in [
            "worker",
            "--coordinator",
            &self.task.coordinator.to_string(),
        ] {
            args.push(a.into());
        }
        docker_async(args)
            .await
            .with_context(|| format!("cannot start a replacement for swarm task {}", index + 1))?;
        self.replaced
            .lock()
            .expect("not poisoned")
            .insert(index, name.clone());
        Ok(name)
    }
    /// `service NAME: 2 running, 2 preparing`.
    pub(crate) async fn progress(&self) -> Option<String> {
        let states = docker_async(vec![
            "service".into(),
            "ps".into(),
            "--format".into(),
            "{{.CurrentState}}".into(),
            self.name.clone(),
        ])
        .await
        .ok()?;
        let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
        for line in states.lines() {
            let state = line.split_whitespace().next().unwrap_or("unknown");
            *counts.entry(state.to_lowercase()).or_default() += 1;
        }
        let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
        Some(format!("service {}: tasks {}", self.name, parts.join(", ")))
    }

    /// Task `index + 1`'s container: its name, its process's pid on this machine.
    pub(crate) async fn process(&self, index: u32) -> anyhow::Result<Process> {
        let filter = format!("label=com.docker.swarm.service.name={}", self.name);
        let prefix = format!("{}.{}.", self.name, index + 1);
        let deadline = Instant::now() + Duration::from_secs(10);
        let replacement = self
            .replaced
            .lock()
            .expect("not poisoned")
            .get(&index)
            .cloned();
        loop {
            let listed = match &replacement {
                Some(name) => name.clone(),
                None => {
                    docker_async(vec![
                        "ps".into(),
                        "--filter".into(),
                        filter.clone(),
                        "--format".into(),
                        "{{.Names}}".into(),
                    ])
                    .await?
                }
            };
            if let Some(name) = listed.lines().find(|n| n.starts_with(&prefix)) {
                let pid = docker_async(vec![
                    "inspect".into(),
                    "--format".into(),
                    "{{.State.Pid}}".into(),
                    name.to_string(),
                ])
                .await?;
                let pid: i32 = pid
                    .parse()
                    .with_context(|| format!("container {name}: no pid in {pid:?}"))?;
                // Root signals the task's process by its pid at once (the fencing pause starts
                // right after the grant); anyone else goes through `docker kill --signal`.
                let via_docker = !nix::unistd::geteuid().is_root();
                if let Some(network) = &self.network {
                    let host = self.host(index, pid, name, network, via_docker).await?;
                    self.hosts.lock().expect("not poisoned").push(host);
                }
                return Ok((Pid::from_raw(pid), Some(name.to_string()), via_docker));
            }
            if Instant::now() > deadline {
                anyhow::bail!(
                    "swarm task {} of {} has no running container (`docker service ps {}`)",
                    index + 1,
                    self.name,
                    self.name
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Task `index + 1`'s client host: its container's network namespace and its address on
    /// `network`, entered through `docker exec` when lockbench is not root.
    async fn host(
        &self,
        index: u32,
        pid: i32,
        container: &str,
        network: &str,
        via_docker: bool,
    ) -> anyhow::Result<Host> {
        let format = format!("{{{{(index .NetworkSettings.Networks \"{network}\").IPAddress}}}}");
        let addr = docker_async(vec![
            "inspect".into(),
            "--format".into(),
            format,
            container.to_string(),
        ])
        .await?;
        let addr = addr
            .parse()
            .with_context(|| format!("container {container}: no address on {network}: {addr:?}"))?;
        Ok(Host {
            name: crate::worker_name(index),
            netns: format!("/proc/{pid}/ns/net"),
            addr,
            exec: via_docker.then(|| container.to_string()),
        })
    }

    /// The client hosts [`Service::process`] found (none with host networking).
    pub(crate) fn client_hosts(&self) -> Vec<Host> {
        self.hosts.lock().expect("not poisoned").clone()
    }

    /// The service's tasks and their errors, and where the workers' logs are.
    pub(crate) async fn diagnose(&self) -> String {
        let tasks = docker_async(vec![
            "service".into(),
            "ps".into(),
            "--no-trunc".into(),
            "--format".into(),
            "{{.Name}} {{.CurrentState}} {{.Error}}".into(),
            self.name.clone(),
        ])
        .await
        .unwrap_or_else(|e| format!("{e:#}"));
        format!(
            "the service's tasks: [{}]; the workers' own words: `docker service logs {}` (the \
             service is removed when this run ends: rerun with LOCKBENCH_LOG=debug to see \
             them here)",
            tasks.lines().collect::<Vec<_>>().join("; "),
            self.name
        )
    }

    /// Removes the service and any replacement container, waits for its containers to go,
    /// removes the secret and the network, and leaves the swarm when this run made it.
    pub(crate) async fn finish(&self) {
        let removal = self.removal.clone();
        let _ = tokio::task::spawn_blocking(move || removal.remove()).await;
    }
}

impl Removal {
    /// The secret file a replacement container mounts, written on first use: root's only
    /// (mode 0600 in a 0700 directory), removed with everything else.
    fn secret_file(&self, secret: &RunSecret) -> anyhow::Result<std::path::PathBuf> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let file = self.secret_dir.join(SECRET_TARGET);
        if file.exists() {
            return Ok(file);
        }
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&self.secret_dir)
            .with_context(|| format!("cannot create {}", self.secret_dir.display()))?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&file)
            .with_context(|| format!("cannot create {}", file.display()))?;
        f.write_all(secret.to_env_value().as_bytes())
            .with_context(|| format!("cannot write {}", file.display()))?;
        Ok(file)
    }

    fn remove(&self) {
        if self.removed.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut problems = Vec::new();
        if let Err(e) = docker(&["service", "rm", &self.name]) {
            problems.push(format!("{e:#}"));
        }
        // Replacements of killed tasks: standalone containers with the run's label.
        let label = format!("label={}", self.label);
        if let Ok(ids) = docker(&["ps", "-aq", "--filter", &label])
            && !ids.is_empty()
        {
            let mut args = vec!["rm", "-f"];
            args.extend(ids.lines());
            if let Err(e) = docker(&args) {
                problems.push(format!("{e:#}"));
            }
        }
        let _ = std::fs::remove_dir_all(&self.secret_dir);
        // The tasks' containers stop after `service rm` returns; the secret cannot go before.
        let filter = format!("label=com.docker.swarm.service.name={}", self.name);
        let deadline = Instant::now() + Duration::from_secs(30);
        while docker(&["ps", "-aq", "--filter", &filter]).is_ok_and(|s| !s.is_empty()) {
            if Instant::now() > deadline {
                problems.push(format!(
                    "containers of {} still there after 30 s",
                    self.name
                ));
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        let mut removed_secret = docker(&["secret", "rm", &self.secret]);
        for _ in 0..20 {
            if removed_secret.is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
            removed_secret = docker(&["secret", "rm", &self.secret]);
        }
        if let Err(e) = removed_secret {
            problems.push(format!("{e:#}"));
        }
        if let Some(network) = &self.network
            && let Err(e) = remove_network(network)
        {
            problems.push(format!("{e:#}"));
        }
        // Another run's service on the swarm keeps it (that run is still using it).
        let others = docker(&["service", "ls", "-q", "--filter", &format!("label={LABEL}")]);
        if self.initialised && others.as_ref().is_ok_and(|o| !o.is_empty()) {
            eprintln!(
                "lockbench: swarm: another run's workers are on the swarm this run made: it is \
                 left in place (`docker swarm leave --force` once they are done)"
            );
        } else if self.initialised
            && let Err(e) = docker(&["swarm", "leave", "--force"])
        {
            problems.push(format!("{e:#}"));
        }
        if problems.is_empty() {
            tracing::info!(service = %self.name, "swarm workers removed");
        } else {
            eprintln!(
                "warning: swarm workers not fully removed: {}; remove by hand: `docker service \
                 rm $(docker service ls -q --filter label={LABEL})`, `docker secret rm $(docker \
                 secret ls -q --filter label={LABEL})`, `docker network rm $(docker network ls -q \
                 --filter label={LABEL})`{}",
                problems.join("; "),
                if self.initialised {
                    ", `docker swarm leave --force`"
                } else {
                    ""
                }
            );
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.removal.remove();
    }
}
