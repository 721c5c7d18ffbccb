//! The command-line surface (clap derive). Everything here is parsing and help text; the
//! commands themselves live in `commands/`.
//!
//! Help text convention: every doc comment opens with a one-line summary, then a blank line,
//! then the details. clap shows the summaries for `-h` and everything for `--help`, so
//! `lockbench -h` fits on a screen and `lockbench run --help` still documents every option;
//! the man page, the completions and docs/commands.md are generated from the same text.

use clap::{ArgAction, Parser, Subcommand};
use std::path::PathBuf;

/// Compare distributed-lock backends under contention and faults, against real servers.
///
/// The backends: ZooKeeper recipes, etcd leases and its Lock API, Redis SET NX, Redlock,
/// PostgreSQL advisory locks, NATS JetStream key-value, MySQL named locks on MariaDB, and lock
/// libraries behind adapters
/// (`lib:NAME`). Every run's history is checked for safety.
///
/// Quick start: `lockbench run quick` starts a local cluster from the OS packages (installing
/// them if needed), runs every backend under contention and prints a comparison table; the full
/// results land in `results/<time>-quick/`.
#[derive(Debug, Parser)]
#[command(
    name = "lockbench",
    version = crate::version::VERSION,
    propagate_version = true,
    // `-h` and `--help` on every command say it all; a `help` command would be one more line
    // in a short help that must fit a screen.
    disable_help_subcommand = true
)]
pub struct Cli {
    /// State directory of the managed cluster.
    ///
    /// Default: $LOCKBENCH_STATE_DIR, else $XDG_STATE_HOME/lockbench, else
    /// ~/.local/state/lockbench. Rarely needed, so `-h` leaves it out.
    #[arg(
        long,
        global = true,
        env = "LOCKBENCH_STATE_DIR",
        hide_env = true,
        hide_short_help = true
    )]
    pub state_dir: Option<PathBuf>,

    /// When to colour: auto, always or never.
    ///
    /// `auto` colours a stream only when it is a terminal and NO_COLOR is unset or empty
    /// (no-color.org); `always` and `never` override NO_COLOR. Applies to the tables,
    /// the verdict lines, the progress bars, log lines and this help.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t = crate::color::Choice::Auto,
        value_name = "WHEN",
        hide_possible_values = true
    )]
    pub color: crate::color::Choice,

    /// Only results, warnings and errors.
    ///
    /// No progress bars, no `lockbench:` narration; log lines below `error` are dropped too (this wins over LOCKBENCH_LOG and RUST_LOG).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// More log lines: -v info, -vv debug, -vvv trace.
    ///
    /// For every crate, on the terminal (lockbench's own) and in the run's lockbench.log
    /// (everything); it wins over LOCKBENCH_LOG and RUST_LOG, whose filter syntax
    /// (`RUST_LOG=zookeeper_client=debug`) picks crates one by one.
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario against every backend it lists and print the comparison.
    ///
    /// The backends run one after another; for `workload.kind = "failover"` every election
    /// recipe in `elections` runs instead, with its leader removed round after round (see
    /// `lockbench run failover`).
    ///
    /// After the run, the scenario's expectations (`[expect]`: which backends must stay safe,
    /// which must show a violation, fencing rejecting every stale write, a minimum throughput)
    /// are checked and printed as `EXPECTATION MET / FAILED / UNKNOWN` lines; every backend
    /// the scenario does not expect to violate is expected to be safe. The run directory gets
    /// results.json, report.html, summary.csv and junit.xml.
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
    /// Start the managed cluster and leave it running.
    ///
    /// The cluster: 3 ZooKeeper, 3 etcd, a standalone Redis, 5 Redis servers for Redlock, a
    /// Redis primary and replica watched by 3 Sentinels, a PostgreSQL primary and replica, 3
    /// NATS servers with JetStream, and a MariaDB primary and replica.
    /// Installs missing server packages first. Idempotent.
    Up {
        /// The secure profile: every server over mutual TLS, with users.
        ///
        /// ZooKeeper, etcd, Redis, Redlock, the Sentinels, PostgreSQL, MariaDB and NATS speak
        /// only TLS with client certificates and admit lockbench's users (certificates and
        /// generated passwords in the state directory; docs/secure-clusters.md); `lockbench run`
        /// then connects that way by itself. A cluster running the other way is restarted; `up`
        /// without it makes a secure cluster plain again.
        #[arg(long)]
        secure: bool,
    },
    /// Make the secure compose cluster's certificates and passwords.
    ///
    /// The files of `up --secure`'s profile (docs/secure-clusters.md), the server certificate
    /// naming the compose services, containers and addresses, in DIR/secure (mode 0700, keys
    /// and passwords 0600), which compose/secure.yml mounts into the servers; then
    /// `docker-compose -f docker-compose.yml -f compose/secure.yml up -d`, and `run --cluster
    /// compose` connects with TLS as lockbench's user by itself. Idempotent (a new set only
    /// when names change).
    ComposeSecureInit {
        /// The directory [default: $LOCKBENCH_COMPOSE_SECRETS, else compose/secrets].
        ///
        /// compose/secure.yml mounts compose/secrets when the variable is not set.
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
    /// Rewrite runs' reports, print one as CSV or JUnit XML, or write a site.
    ///
    /// `--format html` (the default) writes each run directory's self-contained report.html
    /// again, its summary.csv and junit.xml, and the index of all runs beside them
    /// (`results/index.html`). `--format csv` prints the summary table as CSV (one row per
    /// backend, numbers unformatted); `--format junit` prints the expectations as JUnit XML
    /// (one testcase each), for CI systems; `--format markdown` prints the headline and the
    /// summary table as Markdown (a CI job summary). `--site DIR` also copies the runs into DIR with an
    /// index and, for each scenario run more than once, its newest run compared with the one
    /// before: a static site to publish as it is (GitHub Pages, any web server).
    Report(ReportArgs),
    /// Judge a run's history again, as the run's own analysis does.
    ///
    /// The same analysis pass a run makes, over the run directory's `history.jsonl.zst`, for a
    /// run that never finished its analysis (killed with SIGKILL, its disk full). A backend's
    /// history without its end line (cut off) is judged only up to its horizon, the last time
    /// every client's ops are known to be in the file, and its verdict is then `unknown`
    /// unless a violation was found before it. Prints each backend's checkers; writes nothing.
    /// Exit code 0 all valid, 1 a violation, 2 unknown or unreadable.
    Analyse {
        /// Run directories (each holding scenario.toml and history.jsonl.zst).
        #[arg(required = true)]
        run_dirs: Vec<PathBuf>,
    },
    /// Compare two runs: per backend and metric, improved, regressed or no change.
    ///
    /// The inputs are run directories or results.json files. For every shared (backend,
    /// workload, metric) a verdict against per-metric noise thresholds (and, when both runs
    /// have repetitions, from `--repeat` or `lockbench merge`, Welch's t-test, its p-values
    /// adjusted over the whole comparison by Benjamini–Hochberg, so the comparison, not each
    /// metric, keeps the false-alarm rate). Exit code 1 on any regression (a new safety
    /// violation always is one), 2 when an input cannot be read.
    Compare(CompareArgs),
    /// Merge runs of one scenario into one whose repetitions are the runs.
    ///
    /// For a gate that runs the baseline and the candidate in turns (A B A B ...) on one
    /// machine: merge the A runs, merge the B runs, and `lockbench compare` the two, so the
    /// machine's drift falls on both sides alike. A run made with `--repeat N` gives its N
    /// repetitions. Writes OUT/results.json. Exit code 2 when a run cannot be read or the
    /// runs are of different scenarios.
    Merge {
        /// Run directories (or their results.json), in the order they ran.
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Where to write the merged results.json (a directory, created if needed).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// The regression gate's false alarms and power, from runs of one build (A/A).
    ///
    /// Runs of one scenario with nothing changed between them, in the order they ran: each
    /// is compared with the one before exactly as `compare` would (same thresholds and
    /// significance), so every flag is a false one. Prints each comparison, how many failed
    /// the gate (a regression) or flagged anything either way, which metrics flagged, and per
    /// backend the smallest change the gate catches 19 times in 20 given the runs' spread.
    /// With `--rounds` of 2 or more it also compares that many runs a side in turns, merged, as
    /// `scripts/gate` does. With `--calibrate`, writes a thresholds file whose bands fit each
    /// backend's own spread. With `--slowed`, runs made in turns with them but with
    /// `workload.slowdown`, it also counts how often the gate of `--rounds` a side caught each
    /// backend's slowdown over `--trials` draws.
    /// Ten runs or more estimate a rate (docs/comparing.md). Exit code 2 when a run cannot be
    /// read.
    Noise {
        /// Run directories (or their results.json) of one build and one scenario, oldest first.
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Runs a side the gate compares (`scripts/gate`'s turns), for the smallest change it
        /// catches 19 times in 20.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
        rounds: u64,
        /// Write a thresholds file for `compare --config`: per backend and metric, the change
        /// its run-to-run spread alone exceeds once in (tests / significance) comparisons of
        /// `--rounds` runs a side. Calibrate on one set of runs; check on another.
        #[arg(long, value_name = "FILE")]
        calibrate: Option<PathBuf>,
        /// Runs of the same scenario with `workload.slowdown` (made in turns with RUNS): count
        /// how often the gate catches each backend's slowdown (its power).
        #[arg(long, value_name = "RUN", num_args = 1..)]
        slowed: Vec<PathBuf>,
        /// Gates counted with `--slowed`, each on a seeded draw of `--rounds` runs a side.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
        trials: u64,
        /// How the gate judges a change.
        #[command(flatten)]
        gate: GateArgs,
    },
    /// Read runs at several worker or client counts as a scaling curve per backend.
    ///
    /// Runs of the same workload at several worker counts (`--workers swarm:1`, `swarm:2`,
    /// `swarm:4`) or client counts (`--set workload.clients=N`), one table per backend
    /// (throughput, p99, lockbench's CPU per acquisition with its workers and task containers,
    /// each managed server's CPU, the machine's), where the curve flattens and which resource
    /// ran out there: the machine's cores, a server's core, or lockbench; then the Universal
    /// Scalability Law fitted to the points (its peak, and its error on the highest point
    /// when fitted without it) and the predictions `--what-if` asks for. A figure a run could
    /// not measure is `n/a` and named as unknown (docs/capacity.md). Exit code 2 when a run
    /// cannot be read.
    Scaling {
        /// Run directories (or their results.json), any order.
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Also predict the throughput at this concurrency from the fitted model
        /// (`clients=500`, `workers=8`; repeatable). Beyond the measured points the answer
        /// is an extrapolation, and says so.
        #[arg(long = "what-if", value_name = "AXIS=N")]
        what_if: Vec<lockbench_compare::scaling::WhatIf>,
        /// Also draw the measured points and each fitted model in one SVG file.
        #[arg(long, value_name = "FILE")]
        plot: Option<PathBuf>,
    },
    /// Run client slots for a coordinator (internal, or a remote worker).
    ///
    /// Without `--coordinator` (internal): JSON lines on stdin/stdout, as `lockbench run`
    /// starts it. With `--coordinator ADDR`: dial in to a run's coordinator over TCP, with the
    /// run's secret in LOCKBENCH_WORKER_SECRET (never on the command line), serve the job it
    /// hands out, and exit when the run ends or the coordinator goes away
    /// (docs/remote-workers.md).
    #[command(hide = true)]
    Worker(WorkerArgs),
    /// Internal: serve one client of a built-in recipe behind the adapter protocol.
    ///
    /// See docs/adapter-protocol.md; configured from LOCKBENCH_ENDPOINTS and LOCKBENCH_CLIENT.
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
    /// Capacity planning: each backend's highest rate within a latency objective.
    ///
    /// For each backend and each point of a grid (`--vary`), find the highest offered rate
    /// sustained within a latency objective (the knee) with short open-loop steps (a
    /// closed-loop probe, a geometric ramp, then bisection), and print a sizing table. Every
    /// step is kept in the sweep directory (`steps/`), `results.json` holds the knee steps and
    /// the `capacity` field, `report.html` the throughput-latency curves. Try `lockbench sweep
    /// capacity`.
    Sweep(SweepArgs),
    /// Scale benchmark: connect more and more idle clients to each backend.
    ///
    /// Each client has its own session, lease or connections. Per step: the connect time, one
    /// probe client's acquire latency and the servers' resident memory per client (managed
    /// cluster only). Writes scale.json.
    Scale(ScaleArgs),
    /// Serve lockbench's link proxy behind Toxiproxy's HTTP API.
    ///
    /// Any Toxiproxy client can create proxies and add `latency` and `timeout` toxics (the
    /// proxy container of compose mode). Runs until SIGTERM or SIGINT.
    Proxy(crate::commands::proxy::ProxyArgs),
    /// Write Kubernetes manifests for a run's remote workers.
    ///
    /// A Secret with a fresh run secret and an Indexed Job of N `lockbench worker
    /// --coordinator` pods (`workers.yaml`, and `worker-secret.env` for the coordinator; both
    /// mode 0600), then print what to run with kubectl and on the coordinator. The secret is
    /// never printed (docs/remote-workers.md).
    K8sManifests(crate::commands::k8s_manifests::K8sManifestsArgs),
    /// Print a shell completion script for bash, zsh, fish, elvish or powershell.
    ///
    /// Generated from this command line. For example `lockbench completions bash >
    /// ~/.local/share/bash-completion/completions/lockbench`, or `source <(lockbench
    /// completions zsh)` in ~/.zshrc.
    Completions(crate::commands::completions::CompletionsArgs),
    /// Print the man page, or write one page per command into a directory.
    ///
    /// roff, generated from this command line: `lockbench man | man -l -`, or `lockbench man
    /// --dir /usr/local/share/man/man1` for lockbench.1 and lockbench-run.1, ...
    Man(crate::commands::man::ManArgs),
    /// Write the command reference (docs/commands.md, cluster-commands.md, scenario-files.md).
    ///
    /// Generated from this command line and the knob tables of every registered system:
    /// `lockbench help-markdown docs`.
    #[command(hide = true)]
    HelpMarkdown {
        /// The directory to write the pages into.
        #[arg(default_value = "docs")]
        dir: PathBuf,
    },
}

/// Arguments of `lockbench report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Run directories (each holding a results.json).
    #[arg(required = true)]
    pub run_dirs: Vec<PathBuf>,
    /// `html` (write reports), `csv`, `junit` or `markdown` (print on stdout).
    #[arg(long, value_enum, default_value_t = ReportFormat::Html, hide_possible_values = true)]
    pub format: ReportFormat,
    /// Also write a static site of the runs into this directory (created if missing).
    ///
    /// Each run is copied whole under its directory's name, with an index of every run and,
    /// per scenario with two runs or more, its newest run compared with the one before.
    #[arg(long, value_name = "DIR")]
    pub site: Option<PathBuf>,
}

/// `lockbench report --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Write report.html, summary.csv and junit.xml in each run directory.
    Html,
    /// Print the summary table as CSV.
    Csv,
    /// Print the expectations as JUnit XML.
    Junit,
    /// Print the headline and the summary table as Markdown (a CI job summary).
    Markdown,
}

/// Arguments of `lockbench sweep` (flags override the scenario's `[sweep]` table).
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// A scenario file (TOML) or the name of a built-in scenario, e.g. `capacity`.
    pub scenario: String,

    /// A grid dimension: a `--set` path and its values. Repeatable.
    ///
    /// For example `--vary workload.keys=1,16,256`. The grid is the product of every
    /// `--vary`; replaces the scenario's `sweep.vary`.
    #[arg(long = "vary", value_name = "PATH=V1,V2,...")]
    pub vary: Vec<String>,

    /// Offered rates (acquisitions/s): `auto` or a list.
    ///
    /// Over all clients. `auto` probes, ramps up geometrically, then bisects; a
    /// comma-separated list such as `100,200,400` runs those rates.
    #[arg(long, value_name = "auto|R1,R2,...")]
    pub rates: Option<String>,

    /// The latency objective, e.g. `p99=50ms`.
    ///
    /// On the acquire latency measured from the intended start.
    #[arg(long, value_name = "p99=DURATION")]
    pub slo: Option<String>,

    /// Sustained: achieved >= (1 - this) x offered [default: 0.05].
    #[arg(long)]
    pub tolerance: Option<f64>,

    /// Bisect until failed / sustained < 1 + this [default: 0.1].
    ///
    /// The lowest failed rate must be within (1 + resolution) of the highest sustained one.
    #[arg(long)]
    pub resolution: Option<f64>,

    /// Measured length of each step [default: 1500ms].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub step: Option<std::time::Duration>,

    /// Warm-up of each step, not measured [default: 500ms].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub step_warmup: Option<std::time::Duration>,

    /// Most steps per grid point, probe included [default: 10].
    #[arg(long)]
    pub max_steps: Option<u32>,

    /// Override a scenario field (before the grid's values). Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,

    /// Seed for every random choice (overrides the scenario's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,

    /// Servers: managed, compose or external:FILE.
    ///
    /// As for `run`; `LOCKBENCH_CLUSTER` sets the default. On an external cluster only
    /// lockbench's own CPU and memory can be sampled.
    #[arg(
        long,
        default_value = "managed",
        env = "LOCKBENCH_CLUSTER",
        hide_env = true
    )]
    pub cluster: String,

    /// Sweep directory [default: results/TIME-sweep-SCENARIO].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Arguments of `lockbench scale`.
#[derive(Debug, clap::Args)]
pub struct ScaleArgs {
    /// Backends to measure.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "zk-fair,etcd-lease,redis-setnx"
    )]
    pub backends: Vec<String>,
    /// Client counts to reach, ascending.
    ///
    /// Comma-separated and cumulative: each step adds clients to the ones already connected.
    #[arg(long, value_delimiter = ',', default_value = "100,500,1000,2000")]
    pub steps: Vec<u32>,
    /// Acquire/release rounds of the probe client at each step.
    #[arg(long, default_value_t = 200)]
    pub probes: u32,
    /// Queue every client on one held lock instead of leaving it idle.
    ///
    /// A holder keeps the lock, and every client waits on it (a watch or subscription each);
    /// the queue drains at the end.
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
    /// Output: table, markdown (a CI comment) or json.
    #[arg(long, default_value = "table", value_parser = ["table", "markdown", "json"], hide_possible_values = true)]
    pub format: String,
    /// Also write the comparison as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// How the gate judges a change.
    #[command(flatten)]
    pub gate: GateArgs,
}

/// How `compare` (and `noise`) judge a change: the thresholds and the false-alarm rate.
#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// Thresholds file (TOML).
    ///
    /// Fields: `significance`, `latency_floor_us`, and a `[thresholds]` table per metric.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A metric's noise threshold, e.g. `acquire_p99=0.5`. Repeatable.
    ///
    /// A fraction or a percentage (`throughput=20%`). Metrics: throughput, acquire_p50,
    /// acquire_p90, acquire_p99, handoff_p50, handoff_p99.
    #[arg(long = "threshold", value_name = "METRIC=FRACTION")]
    pub thresholds: Vec<String>,
    /// False-alarm rate of the whole comparison [default: 0.05].
    ///
    /// Used when both runs have repetitions (`run --repeat`): a change counts when its
    /// Benjamini–Hochberg adjusted p-value (the table's `q`) is below this.
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

    /// Override a scenario field, e.g. `--set duration=8s`. Repeatable.
    ///
    /// For example `--set workload.clients=8 --set duration=8s --set
    /// backends=zk-fair,etcd-lease`; docs/scenario-files.md lists the fields and knobs.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,

    /// Clients in N dialled-in workers: `dial:N`, `swarm:N` or `external:N`.
    ///
    /// The workers dial in to this run over TCP with a per-run secret: `dial:N` (processes on
    /// this machine), `swarm:N` (the tasks of a Docker Swarm service, image
    /// `lockbench/lockbench:local`) or `external:N` (workers someone else starts, e.g. from
    /// `lockbench k8s-manifests`); `local` is today's worker processes. The same as `--set
    /// workers.launcher=... --set workers.count=N` (docs/remote-workers.md).
    #[arg(long, value_name = "LAUNCHER:N", value_parser = lockbench_core::workers::WorkersSpec::parse)]
    pub workers: Option<lockbench_core::workers::WorkersSpec>,

    /// Where to listen for `--workers external:N` [default: 0.0.0.0:7450].
    ///
    /// The workers someone else started need the secret in this command's
    /// `LOCKBENCH_WORKER_SECRET`. The same as `--set workers.listen=ADDR`.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,

    /// Servers: managed, compose or external:FILE.
    ///
    /// `managed` starts the local servers of the systems the run's backends use, from the OS
    /// packages (reuses them if already up, stops them afterwards if this run started them);
    /// `compose` is the docker-compose.yml cluster, endpoints built in; `external:FILE` is a
    /// TOML file with endpoint lists per group: `zookeeper`, `etcd`, `redis`, `redlock`,
    /// `sentinel` (the Redis failover pair's Sentinels), `postgres`, `nats` and `mariadb`
    /// (`lockbench status --json` prints the managed cluster's).
    /// `LOCKBENCH_CLUSTER` sets the default (`compose` in lockbench's image).
    #[arg(
        long,
        default_value = "managed",
        env = "LOCKBENCH_CLUSTER",
        hide_env = true
    )]
    pub cluster: String,

    /// Run each backend N times (samples for `compare`).
    ///
    /// Repetition k runs with seed + k - 1, and every repetition's figures are stored, so
    /// `lockbench compare` can test the difference for significance.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,

    /// The time the verdict suite may take [default: 25m].
    ///
    /// Only for `lockbench run verdict`: the parts with faults keep their timelines; the
    /// measured windows, the herd and the knee search shrink to fit, and a budget too short
    /// for the fault parts is refused with the shortest that fits.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub budget: Option<std::time::Duration>,
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
    /// Stop when nothing comes from the coordinator for this long.
    ///
    /// Not even a probe, which it sends every second.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration, requires = "coordinator")]
    pub idle: std::time::Duration,
}
