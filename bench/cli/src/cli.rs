//! The command-line surface (clap derive). Everything here is parsing and help text; the
//! commands themselves live in `commands/`.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Compare distributed-lock backends (ZooKeeper, etcd, Redis SET NX, Redlock) side by side,
/// against real servers, with every run's history checked for safety.
///
/// Quick start: `lockbench run quick` starts a local cluster from the OS packages (installing
/// them if needed), runs every backend under contention and prints a comparison table; the full
/// results land in `results/<time>-quick/`.
#[derive(Debug, Parser)]
#[command(name = "lockbench", version, propagate_version = true)]
pub struct Cli {
    /// State directory of the managed cluster [default: $LOCKBENCH_STATE_DIR, else
    /// $XDG_STATE_HOME/lockbench, else ~/.local/state/lockbench].
    #[arg(long, global = true, env = "LOCKBENCH_STATE_DIR", hide_env = true)]
    pub state_dir: Option<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario: every backend it lists, one after another, then print the comparison
    /// (for `workload.kind = "failover"`: every election recipe in `elections`, with its
    /// leader removed round after round; see `lockbench run failover`).
    ///
    /// After the run, the scenario's expectations (`[expect]`: which backends must stay safe,
    /// which must show a violation, fencing rejecting every stale write, a minimum throughput)
    /// are checked and printed as `EXPECTATION MET / FAILED / UNKNOWN` lines; every backend
    /// the scenario does not expect to violate is expected to be safe.
    ///
    /// Exit codes (Jepsen's convention): 0 every expectation met; 1 one failed (an invalid
    /// safety verdict nobody expected, a violation that was expected but not found, fencing
    /// not holding, throughput below the floor); 2 one could not be judged or an error (a
    /// backend could not run, a safety verdict is `unknown` (e.g. nothing was granted, or the
    /// resource's own verdicts disagree with the history), a bad scenario); 130 interrupted
    /// by Ctrl-C, SIGTERM or SIGHUP (what the run started is stopped and its hosts and rules
    /// removed; results.json holds what was measured, with `complete: false`).
    Run(RunArgs),
    /// List the built-in scenarios.
    Scenarios,
    /// Start the managed cluster (3 ZooKeeper, 3 etcd, 1 + 5 Redis) and leave it running.
    /// Installs missing server packages first. Idempotent.
    Up {
        /// The secure profile (docs/secure-clusters.md): Redis and Redlock servers speak only
        /// mutual TLS and admit only user `lockbench` (certificates and a generated password
        /// in the state directory); `lockbench run` then connects that way by itself. A
        /// cluster running the other way is restarted; `up` without it makes a secure
        /// cluster plain again.
        #[arg(long)]
        secure: bool,
    },
    /// Make the secure compose cluster's certificates and passwords (docs/secure-clusters.md):
    /// the files of `up --secure`'s profile, the server certificate naming the compose
    /// services, containers and addresses, in DIR/secure (mode 0700, keys and passwords 0600),
    /// which compose/secure.yml mounts into the servers; then `docker-compose -f
    /// docker-compose.yml -f compose/secure.yml up -d`, and `run --cluster compose` connects
    /// with TLS as lockbench's user by itself. Idempotent (a new set only when names change).
    ComposeSecureInit {
        /// The directory (default: $LOCKBENCH_COMPOSE_SECRETS, else compose/secrets, which
        /// the overlay mounts when the variable is not set).
        dir: Option<PathBuf>,
    },
    /// Stop the managed cluster and remove leftovers of crashed runs.
    Down,
    /// Describe the managed cluster: every server's pid, health, role and endpoint.
    Status {
        /// Print JSON (with every backend's endpoints) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// (Re)write the self-contained HTML report of finished runs, and the index of all runs
    /// beside them (`results/index.html`).
    Report {
        /// Run directories (each holding a results.json).
        #[arg(required = true)]
        run_dirs: Vec<PathBuf>,
    },
    /// Judge a run's history again: the same analysis pass a run makes, over the run
    /// directory's `history.jsonl.zst`, for a run that never finished its analysis (killed with
    /// SIGKILL, its disk full). A backend's history without its end line (cut off) is judged
    /// only up to its horizon, the last time every client's ops are known to be in the file,
    /// and its verdict is then `unknown` unless a violation was found before it. Prints each
    /// backend's checkers; writes nothing. Exit code 0 all valid, 1 a violation, 2 unknown or
    /// unreadable.
    Analyse {
        /// Run directories (each holding scenario.toml and history.jsonl.zst).
        #[arg(required = true)]
        run_dirs: Vec<PathBuf>,
    },
    /// Compare two runs (run directories or results.json files): for every shared (backend,
    /// workload, metric) a verdict improved / regressed / no change against per-metric noise
    /// thresholds (and Welch's t-test when both runs used `--repeat`). Exit code 1 on any
    /// regression (a new safety violation always is one), 2 when an input cannot be read.
    Compare(CompareArgs),
    /// Read a scaling curve: runs of the same workload at several worker counts (`--workers
    /// swarm:1`, `swarm:2`, `swarm:4`), one table per backend (throughput, p99, lockbench's
    /// CPU per acquisition with its workers and task containers, each managed server's CPU,
    /// the machine's) and where the curve flattens and which resource ran out there: the
    /// machine's cores, a server's core, or lockbench. A figure a run could not measure is
    /// `n/a` and named as unknown (docs/remote-workers.md). Exit code 2 when a run cannot be
    /// read.
    Scaling {
        /// Run directories (or their results.json), any order.
        #[arg(required = true)]
        runs: Vec<PathBuf>,
    },
    /// Run client slots for a coordinator. Without `--coordinator` (internal): JSON lines on
    /// stdin/stdout, as `lockbench run` starts it. With `--coordinator ADDR`: dial in to a run's
    /// coordinator over TCP, with the run's secret in LOCKBENCH_WORKER_SECRET (never on the
    /// command line), serve the job it hands out, and exit when the run ends or the coordinator
    /// goes away (docs/remote-workers.md).
    #[command(hide = true)]
    Worker(WorkerArgs),
    /// Internal: serve one client of a built-in recipe behind the adapter protocol
    /// (docs/adapter-protocol.md), configured from LOCKBENCH_ENDPOINTS and LOCKBENCH_CLIENT.
    #[command(hide = true)]
    ServeAdapter {
        /// The recipe (`redis-setnx`).
        recipe: String,
        /// The knob that takes LOCKBENCH_TTL_MS (`redis.ttl`).
        #[arg(long)]
        life_knob: Option<String>,
        /// The knob that takes LOCKBENCH_PREFIX (`redis.prefix`).
        #[arg(long)]
        prefix_knob: Option<String>,
    },
    /// Capacity planning: for each backend and each point of a grid (`--vary`), find the
    /// highest offered rate sustained within a latency objective (the knee) with short
    /// open-loop steps (a closed-loop probe, a geometric ramp, then bisection), and print a
    /// sizing table. Every step is kept in the sweep directory (`steps/`), `results.json` holds
    /// the knee steps and the `capacity` field, `report.html` the throughput-latency curves.
    /// Try `lockbench sweep capacity`.
    Sweep(SweepArgs),
    /// Scale benchmark: connect more and more idle clients (each with its own session, lease
    /// or connections) to each backend and print, per step, the connect time, one probe
    /// client's acquire latency and the servers' resident memory per client (managed cluster
    /// only). Writes scale.json.
    Scale(ScaleArgs),
    /// Serve lockbench's link proxy behind Toxiproxy's HTTP API, so any Toxiproxy client can
    /// create proxies and add `latency` and `timeout` toxics (the proxy container of compose
    /// mode). Runs until SIGTERM or SIGINT.
    Proxy(crate::commands::proxy::ProxyArgs),
    /// Write Kubernetes manifests for a run's remote workers: a Secret with a fresh run secret
    /// and an Indexed Job of N `lockbench worker --coordinator` pods (`workers.yaml`, and
    /// `worker-secret.env` for the coordinator; both mode 0600), then print what to run with
    /// kubectl and on the coordinator. The secret is never printed (docs/remote-workers.md).
    K8sManifests(crate::commands::k8s_manifests::K8sManifestsArgs),
}

/// Arguments of `lockbench sweep` (flags override the scenario's `[sweep]` table).
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// A scenario file (TOML) or the name of a built-in scenario, e.g. `capacity`.
    pub scenario: String,

    /// A grid dimension: a `--set` path and its values, e.g. `--vary workload.keys=1,16,256`.
    /// Repeatable (the grid is the product); replaces the scenario's `sweep.vary`.
    #[arg(long = "vary", value_name = "PATH=V1,V2,...")]
    pub vary: Vec<String>,

    /// Offered rates (acquisitions/s over all clients): `auto` (probe, ramp, bisect) or a
    /// comma-separated list, e.g. `100,200,400`.
    #[arg(long, value_name = "auto|R1,R2,...")]
    pub rates: Option<String>,

    /// The latency objective on the acquire latency from the intended start, e.g. `p99=50ms`.
    #[arg(long, value_name = "p99=DURATION")]
    pub slo: Option<String>,

    /// A step is sustained only if achieved >= (1 - tolerance) x offered [default: 0.05].
    #[arg(long)]
    pub tolerance: Option<f64>,

    /// Bisect until the lowest failed rate is within (1 + resolution) of the highest
    /// sustained one [default: 0.1].
    #[arg(long)]
    pub resolution: Option<f64>,

    /// Measured length of each step [default: 1500ms].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub step: Option<std::time::Duration>,

    /// Warm-up of each step, not measured [default: 500ms].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub step_warmup: Option<std::time::Duration>,

    /// At most this many steps per grid point, the probe included [default: 10].
    #[arg(long)]
    pub max_steps: Option<u32>,

    /// Override a scenario field (applied before the grid's values). Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,

    /// Seed for every random choice (overrides the scenario's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,

    /// Which servers to use: `managed`, `compose` or `external:FILE` (as for `run`). On an
    /// external cluster only lockbench's own CPU and memory can be sampled.
    #[arg(long, default_value = "managed", env = "LOCKBENCH_CLUSTER")]
    pub cluster: String,

    /// Sweep directory [default: results/TIME-sweep-SCENARIO].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Arguments of `lockbench scale`.
#[derive(Debug, clap::Args)]
pub struct ScaleArgs {
    /// Backends to measure, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "zk-fair,etcd-lease,redis-setnx"
    )]
    pub backends: Vec<String>,
    /// Client counts to reach, in increasing order, comma-separated (cumulative).
    #[arg(long, value_delimiter = ',', default_value = "100,500,1000,2000")]
    pub steps: Vec<u32>,
    /// Acquire/release rounds of the probe client at each step.
    #[arg(long, default_value_t = 200)]
    pub probes: u32,
    /// Queue every client on one lock that a holder keeps (a watch or subscription each)
    /// instead of leaving it idle; the queue drains at the end.
    #[arg(long)]
    pub waiting: bool,
    /// Results directory [default: results/TIME-scale].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Arguments of `lockbench compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline: a run directory or its results.json.
    pub base: PathBuf,
    /// The run to judge: a run directory or its results.json.
    pub new: PathBuf,
    /// Output on stdout: `table`, `markdown` (for a CI comment) or `json`.
    #[arg(long, default_value = "table", value_parser = ["table", "markdown", "json"])]
    pub format: String,
    /// Also write the comparison as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Thresholds file (TOML: `significance`, `latency_floor_us`, `[thresholds]` per metric).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override one metric's noise threshold, e.g. `--threshold acquire_p99=0.5` or
    /// `throughput=20%`. Repeatable. Metrics: throughput, acquire_p50, acquire_p90,
    /// acquire_p99, handoff_p50, handoff_p99.
    #[arg(long = "threshold", value_name = "METRIC=FRACTION")]
    pub thresholds: Vec<String>,
    /// Significance level of Welch's t-test, used when both runs have repetitions [default: 0.05].
    #[arg(long)]
    pub significance: Option<f64>,
}

/// Arguments of `lockbench run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// A scenario file (TOML) or the name of a built-in scenario (see `lockbench scenarios`).
    pub scenario: String,

    /// Results directory [default: results/TIME-SCENARIO, TIME in UTC].
    #[arg(long)]
    pub out: Option<PathBuf>,

    /// Seed for every random choice (overrides the scenario's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,

    /// Override a scenario field, e.g. `--set workload.clients=8 --set duration=8s
    /// --set backends=zk-fair,etcd-lease`. Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,

    /// Run the clients in N workers that dial in to this run over TCP with a per-run secret:
    /// `dial:N` (processes on this machine), `swarm:N` (the tasks of a Docker Swarm
    /// service, image `lockbench/lockbench:local`) or `external:N` (workers someone else
    /// starts, e.g. from `lockbench k8s-manifests`); `local` is today's worker processes. The
    /// same as `--set workers.launcher=... --set workers.count=N` (docs/remote-workers.md).
    #[arg(long, value_name = "LAUNCHER:N", value_parser = lockbench_core::workers::WorkersSpec::parse)]
    pub workers: Option<lockbench_core::workers::WorkersSpec>,

    /// With `--workers external:N`: where to listen for the workers someone else started
    /// (default 0.0.0.0:7450); they need the secret in this command's
    /// `LOCKBENCH_WORKER_SECRET`. The same as `--set workers.listen=ADDR`.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,

    /// Which servers to use: `managed` (start local servers from the OS packages, reuse them if
    /// already up, stop them afterwards if this run started them), `compose` (the
    /// docker-compose.yml cluster, endpoints built in) or `external:FILE` (a TOML file with
    /// `zookeeper`, `etcd`, `redis` and `redlock` endpoint lists). `LOCKBENCH_CLUSTER` sets
    /// the default (`compose` in lockbench's image).
    #[arg(long, default_value = "managed", env = "LOCKBENCH_CLUSTER")]
    pub cluster: String,

    /// Run each backend N times in a row (repetition k with seed + k - 1) and store every
    /// repetition's figures, so `lockbench compare` can test the difference for significance.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,

    /// Do not print the progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// `lockbench worker`'s options.
#[derive(clap::Args, Debug)]
pub struct WorkerArgs {
    /// Dial in to the coordinator at this address (`host:port`) instead of reading stdin.
    #[arg(long, value_name = "ADDR")]
    pub coordinator: Option<String>,
    /// The name this worker gives the coordinator (default: `worker-<hostname>-<pid>`).
    #[arg(long, env = "LOCKBENCH_WORKER_NAME", requires = "coordinator")]
    pub name: Option<String>,
    /// How long to keep trying to reach the coordinator (it may not listen yet).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration, requires = "coordinator")]
    pub patience: std::time::Duration,
    /// Stop when nothing (not even a probe, sent every second) comes from the coordinator
    /// for this long.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration, requires = "coordinator")]
    pub idle: std::time::Duration,
}
