//! A scenario: backends x workload x knobs x duration x seed, as one TOML value.
//!
//! A scenario is read from a file (or a built-in), overridden with `--set path=value`, filled
//! with defaults, validated, and saved verbatim beside its results, so a run can be repeated
//! exactly. Every random choice in the run draws from RNGs seeded from [`Scenario::seed`].
//!
//! Errors name the field: unknown keys are rejected (`deny_unknown_fields`; a top-level key that
//! is not a field is taken as a system's knob table, see [`crate::knobs`], and anything but a
//! table there is rejected), and [`Scenario::validate`] reports values that parse but make no
//! sense.

use crate::election::{ElectionKind, FailoverKnobs};
use crate::expect::Expectations;
use crate::fault::{Fault, Route, Targets};
use crate::ids::BackendKind;
use crate::knobs::Knobs;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// A complete, validated description of a run.
///
/// No `deny_unknown_fields` here: serde does not combine it with `flatten`; [`Knobs`] takes the
/// keys that are no field and rejects those that are not tables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Short name, used in the results directory name.
    pub name: String,
    /// One line on what the scenario shows.
    #[serde(default)]
    pub description: String,
    /// Seed for every random choice in the run (hold/think times, retry jitter, schedules).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// The recipes to run, one after another, on the same workload. Empty for the `failover`
    /// workload, which runs `elections` instead.
    #[serde(default)]
    pub backends: Vec<BackendKind>,
    /// How long each backend is measured, after warm-up.
    #[serde(with = "humantime_serde", default = "default_duration")]
    pub duration: Duration,
    /// How long each backend runs before measuring starts. Ops during warm-up are still in the
    /// history and still checked for safety; they are left out of latency and throughput.
    #[serde(with = "humantime_serde", default = "default_warmup")]
    pub warmup: Duration,
    /// Warm-up rounds before each lock backend is measured, until successive rounds agree
    /// (`[steady]`, off unless `max` is set): see [`crate::steady`].
    #[serde(default, skip_serializing_if = "steady_is_off")]
    pub steady: crate::steady::Steady,
    /// What the clients do.
    pub workload: Workload,
    /// How the protected resource treats fencing tokens.
    #[serde(default)]
    pub resource: ResourceMode,
    /// Who starts the worker processes (`[workers]`, `--workers dial:N`): see
    /// [`crate::workers`]. Absent: `local`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<crate::workers::WorkersSpec>,
    /// Every system's knob tables (`[zookeeper]`, `[etcd]`, `[redis]`, `[redlock]`), keyed by
    /// table name; the systems' crates define them, the registry fills their defaults.
    #[serde(flatten)]
    pub knobs: Knobs,
    /// After the last scheduled fault, everything is healed and the clients run on for this
    /// long, so results show whether (and how fast) each backend recovered. Only used when
    /// `faults` is not empty; the run is `warmup + duration + recovery` long then.
    #[serde(with = "humantime_serde", default = "default_recovery")]
    pub recovery: Duration,
    /// Raise an alarm (printed, and in results) when no client completes an acquisition for
    /// this long while the run goes.
    #[serde(with = "humantime_serde", default = "default_stall_alarm")]
    pub stall_alarm: Duration,
    /// Run a server-side observer beside the clients: a watch from its own session that
    /// records who the servers say holds each lock (`"type":"server"` lines in the history),
    /// for the lost-while-held and detection-latency figures. Off by default so measured
    /// figures never include its load; the chaos and fencing scenarios turn it on.
    #[serde(default)]
    pub observe_server: bool,
    /// The fault schedule (`[[faults]]` tables), applied by the nemesis while the clients run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultSpec>,
    /// The leader-election recipes the `failover` workload runs, one after another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elections: Vec<ElectionKind>,
    /// The `failover` workload's knobs (how the leader is removed, how often).
    #[serde(default)]
    pub failover: FailoverKnobs,
    /// How `lockbench sweep` runs this scenario (`[sweep]`); `lockbench run` ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<crate::sweep::SweepSpec>,
    /// What the results must show (`[expect]`): checked after the run, which exits 1 when one
    /// fails. Every backend not expected to violate is expected to be safe.
    #[serde(default, skip_serializing_if = "Expectations::is_empty")]
    pub expect: Expectations,
}

fn default_recovery() -> Duration {
    Duration::from_secs(5)
}
fn default_stall_alarm() -> Duration {
    Duration::from_secs(5)
}

/// One entry of the fault schedule: a fault verb (the same tables as [`Fault`]), when it
/// starts, and how long it lasts.
///
/// TOML:
/// ```toml
/// [[faults]]
/// fault = "partition"
/// split = { isolate = "leader" }
/// at = "3s"            # or: every = "10s" (with seeded offsets, see `every_jitter`)
/// duration = "5s"      # then the inverse verb (heal / resume / start) is applied
/// ```
/// Times count from the end of warm-up. A fault without `duration` stays until the final
/// heal (or is instantaneous, like `clock-jump`).
///
/// The schedule's fields and the verb's ([`Fault`]) share one table, so their names must
/// differ: the random offset bound of a repeating entry is `every_jitter`, because `jitter`
/// is `link-delay`'s (latency ± jitter). When both were `jitter`, a `link-delay`'s jitter
/// was read as the schedule's, and the scenario written back had `jitter` twice, which the
/// worker's job line rejected (`duplicate field 'jitter'`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultSpec {
    /// The verb and its targets.
    #[serde(flatten)]
    pub fault: Fault,
    /// Start once, this long after the measured window opens.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde::option"
    )]
    pub at: Option<Duration>,
    /// Start repeatedly: one window per period, each starting at a seeded random offset in
    /// `[0, jitter]` after the period's start.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde::option"
    )]
    pub every: Option<Duration>,
    /// Random offset bound for `every` (default: the period minus `duration`, so windows never
    /// overlap their successor).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde::option"
    )]
    pub every_jitter: Option<Duration>,
    /// How long the fault lasts before its inverse is applied.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde::option"
    )]
    pub duration: Option<Duration>,
}

fn default_seed() -> u64 {
    1
}
fn default_duration() -> Duration {
    Duration::from_secs(10)
}
fn default_warmup() -> Duration {
    Duration::from_secs(1)
}
fn steady_is_off(s: &crate::steady::Steady) -> bool {
    *s == crate::steady::Steady::default()
}

/// The workload: N clients contending for K lock keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Which workload: `contention` (the default), `fencing` or `herd`.
    #[serde(default)]
    pub kind: WorkloadKind,
    /// Number of concurrent clients, each with its own session/lease/connections.
    pub clients: u32,
    /// Number of lock keys; client `i` starts on key `i % keys`, then see `key_choice`.
    pub keys: u32,
    /// How a client picks the key of each acquire after its first.
    #[serde(default)]
    pub key_choice: KeyChoice,
    /// How long a client holds the lock before releasing it.
    #[serde(default)]
    pub hold: Dist,
    /// How long a client waits after releasing before it asks again (closed loop only).
    #[serde(default)]
    pub think: Dist,
    /// Offered load in acquisitions per second over all clients (open loop). Absent: closed
    /// loop, each client asks again as soon as it has released and thought.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Stop after this many measured acquisitions in total, instead of after `duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acquisitions: Option<u64>,
    /// An acquire that takes longer than this is abandoned and recorded as indeterminate
    /// (`info`); the client that saw it is retired and replaced.
    #[serde(with = "humantime_serde", default = "default_acquire_timeout")]
    pub acquire_timeout: Duration,
    /// `fencing` only: how long the holder is stopped (SIGSTOP) right after its grant, before
    /// it writes. Absent: twice the backend's expiry (session timeout, lease TTL, key TTL).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde::option"
    )]
    pub pause: Option<Duration>,
    /// Where client slots run. `in-process` (the default for `contention`): tasks inside the
    /// coordinator, the fastest path. `workers`: each slot in its own worker process, so a
    /// fault can pause or cut off a real client with its heartbeats. The `fencing` holder is
    /// always a worker process.
    #[serde(default)]
    pub processes: Processes,
    /// The share of acquires made in shared (read) mode, 0.0 to 1.0 (default 0: every acquire
    /// exclusive). Drawn per acquire from the client's seeded generator. Only recipes with a
    /// read/write lock (zk-rwlock) have a shared mode; the others take the lock exclusively.
    /// Readers do not write to the protected resource.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub read_fraction: f64,
    /// Renew a held lock this often while holding it (a watchdog, as Redisson,
    /// python-redis-lock and etcd sessions run one: every third of the lock's life): the hold
    /// (`hold`, often several times the lock's life) is cut into renewals, each recorded as a
    /// `renew` op; a renew that fails (`lock-lost`) ends the hold at once with the release.
    /// Must be shorter than every backend's lock life (`lockbench_registry::expiry`). What a renew is
    /// depends on the recipe: compare-and-`PEXPIRE` (Redis), the same on a quorum (Redlock),
    /// a lease keep-alive (etcd), a check that the session and the lock node live (ZooKeeper).
    /// Absent: no renewals (holds must then be shorter than the lock's life).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde::option"
    )]
    pub renew_every: Option<Duration>,
    /// A delay every client waits inside each acquire, after the lock is granted and before
    /// the acquire returns, on purpose: to measure what the regression gate catches. One for
    /// every backend or one per backend ([`crate::slowdown`]). Every result made with it
    /// carries it (`injected_slowdown_ms`) and every headline and comparison names it, so it
    /// is never left on unseen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowdown: Option<crate::slowdown::Slowdown>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Where client slots run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Processes {
    /// Tasks inside the coordinator process.
    #[default]
    InProcess,
    /// One worker process per client slot (`lockbench worker`).
    Workers,
}

fn default_acquire_timeout() -> Duration {
    Duration::from_secs(15)
}

/// How clients pick lock keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyChoice {
    /// Uniformly at random each time (seeded): clients meet on keys by chance.
    #[default]
    Random,
    /// Client `i` always uses key `i % keys`, as the reference clients in docs/performance.md do:
    /// with as many keys as clients, nobody contends.
    PerClient,
}

/// Which workload shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// N clients, K keys: acquire, write to the resource, hold, release, think.
    #[default]
    Contention,
    /// Kleppmann's scenario: client 0 (a worker process, the *holder*) acquires and is stopped
    /// right after its grant for longer than its lock lives, while the other clients keep
    /// contending; resumed, it writes with its old token.
    Fencing,
    /// Notification fan-out: N clients queue on one key behind a holder that holds for
    /// `hold`, releases and queues again, so every release has the other clients waiting.
    /// Runs the contention loop (set `keys = 1`, `hold` > 0); results add `fanout`:
    /// notifications, wasted wake-ups and requests per release.
    Herd,
    /// Leader election: `workload.clients` candidates (each its own worker process) elect a
    /// leader among them, per recipe in `elections`; the leader is removed as `[failover]`
    /// says, round after round; results add `failover`: time to a new leader, time until
    /// every candidate observed it, split-brain overlap.
    Failover,
}

impl WorkloadKind {
    /// The name results print.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Contention => "contention",
            WorkloadKind::Fencing => "fencing",
            WorkloadKind::Herd => "herd",
            WorkloadKind::Failover => "failover",
        }
    }
}

impl Scenario {
    /// The names of what the run runs, in order: its backends, then its election recipes.
    pub fn unit_names(&self) -> Vec<String> {
        let backends = self.backends.iter().map(|b| b.name().to_string());
        backends
            .chain(self.elections.iter().map(|e| e.name().to_string()))
            .collect()
    }
}

/// A duration that is fixed or drawn from a distribution.
///
/// TOML: `"5ms"`, `{ uniform = ["1ms", "5ms"] }` or `{ exponential = "2ms" }` (the mean).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "a duration like \"5ms\", { uniform = [\"1ms\", \"5ms\"] } or { exponential = \"2ms\" }"
)]
pub enum Dist {
    /// Always the same.
    Fixed(#[serde(with = "humantime_serde")] Duration),
    /// Uniform between two bounds.
    Uniform {
        /// `[low, high]`.
        uniform: [humantime_serde::Serde<Duration>; 2],
    },
    /// Exponential with the given mean.
    Exponential {
        /// The mean.
        #[serde(with = "humantime_serde")]
        exponential: Duration,
    },
}

impl Default for Dist {
    fn default() -> Dist {
        Dist::Fixed(Duration::ZERO)
    }
}

impl Dist {
    /// Draws a duration, given a uniform sample `u` in `[0, 1)`.
    pub fn sample(&self, u: f64) -> Duration {
        match *self {
            Dist::Fixed(d) => d,
            Dist::Uniform { uniform: [lo, hi] } => *lo + (hi.saturating_sub(*lo)).mul_f64(u),
            Dist::Exponential { exponential } => exponential.mul_f64(-(1.0 - u).ln()),
        }
    }

    /// `true` when every draw is zero (lets the client loop skip a sleep).
    pub fn is_zero(&self) -> bool {
        matches!(self, Dist::Fixed(d) if d.is_zero())
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = humantime::format_duration;
        match self {
            Dist::Fixed(d) => write!(f, "{}", h(*d)),
            Dist::Uniform { uniform: [a, b] } => write!(f, "uniform({}..{})", h(**a), h(**b)),
            Dist::Exponential { exponential } => write!(f, "exponential(mean {})", h(*exponential)),
        }
    }
}

/// How the protected resource treats the fencing tokens holders write with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResourceMode {
    /// Reject a write whose token is lower than the highest seen (what a careful service does).
    #[default]
    Fenced,
    /// Accept every write, but still count the stale ones (what most services do).
    Unfenced,
    /// Deliberately broken, to prove the fencing audit alive: fenced, except that every other
    /// stale write (the first, the third, ...) is accepted *and reported fresh*, as a
    /// resource with a wrong staleness check would. The resource's own counts then read
    /// "0 stale writes accepted"; the audit, which recomputes staleness from the history,
    /// reports an instrument fault and the verdict becomes `unknown`.
    Misreporting,
}

/// A problem with a scenario, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scenario field `{field}`: {problem}")]
pub struct ScenarioError {
    /// Dotted path of the field, e.g. `workload.clients`.
    pub field: String,
    /// What is wrong with it, and how to fix it.
    pub problem: String,
}

impl ScenarioError {
    /// The problem `problem` with the field `field` (a dotted path).
    pub fn new(field: &str, problem: impl Into<String>) -> ScenarioError {
        ScenarioError {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

pub(crate) fn bad(field: &str, problem: impl Into<String>) -> ScenarioError {
    ScenarioError::new(field, problem)
}

impl Scenario {
    /// This scenario as `backend` runs it: a per-backend `workload.slowdown` resolved to that
    /// backend's delay (or none), so its clients and its result see one delay.
    pub fn for_backend(&self, backend: &str) -> Scenario {
        let mut own = self.clone();
        own.workload.slowdown = self
            .workload
            .slowdown
            .as_ref()
            .and_then(|s| s.for_backend(backend))
            .map(crate::slowdown::Slowdown::Every);
        own
    }

    /// Parses TOML text, applies `--set path=value` overrides, fills defaults and validates.
    ///
    /// `source` names the text in errors (a file path or `built-in scenario quick`).
    ///
    /// The systems' knob tables are kept as given: core does not know them. A run loads with
    /// `lockbench_registry::load_scenario`, which fills and checks them too; this alone is for
    /// tests of logic that reads no knobs.
    pub fn load(source: &str, text: &str, overrides: &[String]) -> Result<Scenario, String> {
        let parsed: Scenario =
            toml::from_str(text).map_err(|e| format!("{source}: {}", e.to_string().trim_end()))?;
        let scenario = if overrides.is_empty() {
            parsed
        } else {
            let mut table = toml::Table::try_from(&parsed).map_err(|e| e.to_string())?;
            for o in overrides {
                apply_override(&mut table, o)?;
            }
            let text = toml::to_string(&table).map_err(|e| e.to_string())?;
            toml::from_str(&text).map_err(|e| {
                format!(
                    "{source} with --set {}: {}",
                    overrides.join(" --set "),
                    e.to_string().trim_end()
                )
            })?
        };
        scenario.validate().map_err(|e| format!("{source}: {e}"))?;
        Ok(scenario)
    }

    /// The scenario as TOML with every default filled in (what `scenario.toml` holds).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("scenario serializes")
    }

    /// Checks values that parse but cannot work.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let w = &self.workload;
        if self.name.trim().is_empty() {
            return Err(bad("name", "must not be empty"));
        }
        if w.kind == WorkloadKind::Failover {
            self.validate_failover()?;
        } else if self.backends.is_empty() {
            return Err(bad(
                "backends",
                "list at least one backend, e.g. [\"zk-fair\"]",
            ));
        }
        if w.clients == 0 {
            return Err(bad("workload.clients", "must be at least 1"));
        }
        if w.keys == 0 {
            return Err(bad("workload.keys", "must be at least 1"));
        }
        if self.duration.is_zero() && w.acquisitions.is_none() {
            return Err(bad(
                "duration",
                "must be above zero unless workload.acquisitions sets a count",
            ));
        }
        if let Some(rate) = w.rate
            && !(rate.is_finite() && rate > 0.0)
        {
            return Err(bad(
                "workload.rate",
                "must be a positive number of acquisitions/s",
            ));
        }
        if w.acquisitions == Some(0) {
            return Err(bad("workload.acquisitions", "must be at least 1 when set"));
        }
        if w.acquire_timeout.is_zero() {
            return Err(bad("workload.acquire_timeout", "must be above zero"));
        }
        if let Some(slowdown) = &w.slowdown {
            let names: Vec<&str> = self.backends.iter().map(|b| b.name()).collect();
            slowdown
                .validate(&names, w.acquire_timeout)
                .map_err(|problem| bad("workload.slowdown", problem))?;
        }
        for (field, d) in [("workload.hold", &w.hold), ("workload.think", &w.think)] {
            if let Dist::Uniform { uniform: [lo, hi] } = d
                && **lo > **hi
            {
                return Err(bad(field, "uniform bounds must be [low, high]"));
            }
        }
        if let Some(sweep) = &self.sweep {
            sweep.validate().map_err(|e| match e.split_once(": ") {
                Some((field, problem)) => bad(field, problem),
                None => bad("sweep", e),
            })?;
        }
        if w.kind == WorkloadKind::Fencing && w.clients < 2 {
            return Err(bad(
                "workload.clients",
                "the fencing workload needs at least 2 clients (a holder and a contender)",
            ));
        }
        if w.kind == WorkloadKind::Herd && (w.clients < 2 || w.keys != 1) {
            return Err(bad(
                "workload",
                "the herd workload needs at least 2 clients and exactly 1 key (everyone queues on it)",
            ));
        }
        if !(0.0..=1.0).contains(&w.read_fraction) {
            return Err(bad("workload.read_fraction", "must be between 0.0 and 1.0"));
        }
        self.validate_renewals()?;
        if let Some(workers) = &self.workers {
            if workers.count == 0 {
                return Err(bad("workers.count", "must be at least 1"));
            }
            if workers.dials_in() && w.kind == WorkloadKind::Failover {
                return Err(bad(
                    "workers.launcher",
                    "the failover workload's candidates do not dial in; use launcher = \"local\"",
                ));
            }
        }
        if self.stall_alarm.is_zero() {
            return Err(bad("stall_alarm", "must be above zero"));
        }
        self.steady
            .validate()
            .map_err(|(field, problem)| bad(field, problem))?;
        for (i, f) in self.faults.iter().enumerate() {
            let field = format!("faults[{i}]");
            match (f.at, f.every) {
                (Some(_), Some(_)) => return Err(bad(&field, "give `at` or `every`, not both")),
                (None, None) => return Err(bad(&field, "give `at = \"3s\"` or `every = \"10s\"`")),
                (_, Some(e)) if e.is_zero() => {
                    return Err(bad(&field, "`every` must be above zero"));
                }
                (_, Some(e)) if f.duration.is_some_and(|d| d >= e) => {
                    return Err(bad(&field, "`duration` must be shorter than `every`"));
                }
                (Some(_), None) if f.every_jitter.is_some() => {
                    return Err(bad(
                        &field,
                        "`every_jitter` spreads the windows of a repeating entry: use it with `every`, not `at`",
                    ));
                }
                _ => {}
            }
        }
        self.validate_fault_times()?;
        self.validate_fault_mix()?;
        self.expect.validate(&self.unit_names())?;
        Ok(())
    }
}

impl Scenario {
    /// `workload.renew_every`: above zero, shorter than every backend's lock life (a renewal
    /// after the lock expired renews nothing; the registry checks that one, it reads the
    /// knobs), and only where a client holds locks the
    /// contention loop's way (not the fencing holder, not elections).
    fn validate_renewals(&self) -> Result<(), ScenarioError> {
        let Some(every) = self.workload.renew_every else {
            return Ok(());
        };
        let field = "workload.renew_every";
        if every.is_zero() {
            return Err(bad(field, "must be above zero"));
        }
        if matches!(
            self.workload.kind,
            WorkloadKind::Fencing | WorkloadKind::Failover
        ) {
            return Err(bad(
                field,
                "renewals are for the contention and herd workloads (the fencing holder and \
                 election candidates do not renew)",
            ));
        }
        // Shorter than every backend's lock life: checked where the knobs are known
        // (`lockbench_registry::load_scenario`).
        Ok(())
    }

    /// Fault kinds that cannot work together in one schedule, refused naming the entry.
    /// `packet-loss` on a client host with a link fault (`link-delay`, `link-blackhole`) in the
    /// same schedule: the link fault puts every client behind a link proxy in the coordinator,
    /// so the servers see the coordinator's address, and the rules (inside the servers,
    /// matching the client host's address) see none of its traffic, while the start probe,
    /// sent from the client host itself, passes. Measured (etcd-lease, two workers, nth 0.25
    /// on client1 for 5 s): without the link fault the window's traffic lost 96 of 380
    /// packets, with a 1 ms `link-delay` earlier in the schedule "no packet crossed the rules".
    fn validate_fault_mix(&self) -> Result<(), ScenarioError> {
        let Some(link) = self
            .faults
            .iter()
            .position(|f| f.fault.route() == Route::Proxies)
        else {
            return Ok(());
        };
        for (i, f) in self.faults.iter().enumerate() {
            let Fault::PacketLoss {
                targets: Targets::Nodes(names),
                ..
            } = &f.fault
            else {
                continue;
            };
            if let Some(client) = names.iter().find(|n| n.starts_with("client")) {
                return Err(bad(
                    &format!("faults[{i}]"),
                    format!(
                        "packet-loss on client host {client}, and faults[{link}] ({}) is a link \
                         fault: with one in the schedule every client reaches the servers \
                         through a link proxy in the coordinator, so the servers see the \
                         coordinator's address and rules for {client}'s would drop none of its \
                         packets (the probe at the start, sent from {client} itself, would pass \
                         all the same). Target the servers instead (`targets = \"all\"`: every \
                         client's links, the proxies' included), or put the link fault in another \
                         scenario",
                        self.faults[link].fault.verb()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Every fault must happen inside the run's *fault phase*: the first `duration` of the
    /// measured window (after warm-up), which ends with a final heal, then `recovery`. A fault
    /// scheduled later used to be accepted and silently never applied, so it is an error,
    /// naming the entry, its verb, its time and the run's `duration`:
    ///
    /// - `at`: the fault must start before `duration`, and a window (`at` + its `duration`)
    ///   must end by then (the final heal would cut it short otherwise);
    /// - `every`: the first period starts at 0, so every repeating entry happens; each period
    ///   that starts inside the phase gets one window (its seeded offset is drawn from what is
    ///   left of the phase), and the last window may be cut short by the final heal;
    /// - a run that stops by count (`workload.acquisitions`) ends when the count is reached,
    ///   which no one knows in advance (`duration` is then only an upper bound, or none at
    ///   all when zero), so a fault schedule cannot be promised: such a scenario is rejected.
    fn validate_fault_times(&self) -> Result<(), ScenarioError> {
        let h = humantime::format_duration;
        let Some(first) = self.faults.first() else {
            return Ok(());
        };
        for (i, f) in self.faults.iter().enumerate() {
            f.fault
                .check()
                .map_err(|e| bad(&format!("faults[{i}]"), e))?;
        }
        if self.workload.acquisitions.is_some() {
            return Err(bad(
                "workload.acquisitions",
                format!(
                    "the run stops by count, at a time nobody knows in advance, so faults[0] ({}) \
                     might never happen; a scenario with faults stops by `duration`: remove \
                     workload.acquisitions",
                    describe(first)
                ),
            ));
        }
        let phase = self.duration;
        for (i, f) in self.faults.iter().enumerate() {
            let Some(at) = f.at else { continue };
            let advice = format!(
                "faults happen in the first `duration` ({}) after warm-up, then everything is \
                 healed for `recovery`: move it earlier or raise `duration`",
                h(phase)
            );
            if at >= phase {
                return Err(bad(
                    &format!("faults[{i}]"),
                    format!(
                        "{} starts after the run's fault phase has ended; {advice}",
                        describe(f)
                    ),
                ));
            }
            if let Some(d) = f.duration.filter(|d| at + *d > phase) {
                return Err(bad(
                    &format!("faults[{i}]"),
                    format!(
                        "{} ends at {}, after the run's fault phase has ended (the final heal \
                         would cut it short); {advice}",
                        describe(f),
                        h(at + d)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// `link-delay at 15s for 3s`, `pause every 10s for 2s`: a schedule entry as errors name it.
fn describe(f: &FaultSpec) -> String {
    let h = humantime::format_duration;
    let when = match (f.at, f.every) {
        (Some(at), _) => format!(" at {}", h(at)),
        (None, Some(every)) => format!(" every {}", h(every)),
        (None, None) => String::new(),
    };
    let length = f
        .duration
        .map(|d| format!(" for {}", h(d)))
        .unwrap_or_default();
    format!("{}{when}{length}", f.fault.verb())
}

/// Applies one `path=value` override to a scenario table.
///
/// The value is read as TOML when it parses (`8`, `true`, `"x"`, `[1, 2]`) and as a string
/// otherwise (`8s`, `zk-fair`). A comma-separated value, or any value for a field that holds a
/// list, becomes a list of strings: `backends=zk-fair,etcd-lease`.
pub fn apply_override(table: &mut toml::Table, assignment: &str) -> Result<(), String> {
    let (path, raw) = assignment.split_once('=').ok_or_else(|| {
        format!("--set {assignment}: expected path=value, e.g. workload.clients=8")
    })?;
    let path = path.trim();
    let parts: Vec<&str> = path.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("--set {assignment}: `{path}` is not a field path"));
    }
    let mut cursor = table;
    for part in &parts[..parts.len() - 1] {
        let entry = cursor
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cursor = entry
            .as_table_mut()
            .ok_or_else(|| format!("--set {assignment}: `{part}` is a value, not a table"))?;
    }
    let leaf = parts[parts.len() - 1];
    let existing_is_list = matches!(cursor.get(leaf), Some(toml::Value::Array(_)));
    let value = parse_override_value(raw.trim(), existing_is_list);
    cursor.insert(leaf.to_string(), value);
    Ok(())
}

fn parse_override_value(raw: &str, want_list: bool) -> toml::Value {
    let parsed = format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"));
    match parsed {
        Some(v @ toml::Value::Array(_)) => v,
        Some(v) if !want_list => v,
        _ if want_list || raw.contains(',') => toml::Value::Array(
            raw.split(',')
                .map(|s| toml::Value::String(s.trim().to_string()))
                .collect(),
        ),
        _ => toml::Value::String(raw.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "t"
backends = ["zk-fair"]
[workload]
clients = 2
keys = 1
"#;

    #[test]
    fn defaults_are_filled_and_round_trip() {
        let s = Scenario::load("t", MINIMAL, &[]).unwrap();
        assert_eq!(s.workload.acquire_timeout, Duration::from_secs(15));
        let again = Scenario::load("again", &s.to_toml(), &[]).unwrap();
        assert_eq!(again, s);
    }

    #[test]
    fn overrides_set_numbers_durations_lists_and_distributions() {
        let sets = [
            "workload.clients=8",
            "duration=8s",
            "backends=zk-fair,etcd-lease",
            "workload.hold={ uniform = [\"1ms\", \"3ms\"] }",
            "workload.rate=500",
        ]
        .map(String::from);
        let s = Scenario::load("t", MINIMAL, &sets).unwrap();
        assert_eq!(s.workload.clients, 8);
        assert_eq!(s.duration, Duration::from_secs(8));
        assert_eq!(
            s.backends,
            vec![BackendKind::of("zk-fair"), BackendKind::of("etcd-lease")]
        );
        assert_eq!(
            s.workload.hold,
            Dist::Uniform {
                uniform: [
                    Duration::from_millis(1).into(),
                    Duration::from_millis(3).into()
                ]
            }
        );
        assert_eq!(s.workload.rate, Some(500.0));
        let one = Scenario::load("t", MINIMAL, &["backends=redlock".into()]).unwrap();
        assert_eq!(one.backends, vec![BackendKind::of("redlock")]);
    }

    #[test]
    fn a_misspelled_field_is_named() {
        let err =
            Scenario::load("f.toml", &MINIMAL.replace("clients", "clinets"), &[]).unwrap_err();
        assert!(err.contains("clinets") && err.contains("f.toml"), "{err}");
        let err = Scenario::load("t", MINIMAL, &["workload.clinets=3".into()]).unwrap_err();
        assert!(err.contains("clinets"), "{err}");
    }

    #[test]
    fn a_bad_value_is_named_with_its_field() {
        let err = Scenario::load("t", MINIMAL, &["workload.clients=0".into()]).unwrap_err();
        assert!(err.contains("workload.clients"), "{err}");
        let err = Scenario::load("t", MINIMAL, &["duration=soon".into()]).unwrap_err();
        assert!(err.contains("duration"), "{err}");
    }

    #[test]
    fn a_fault_schedule_reads_and_round_trips() {
        let text = format!(
            "{MINIMAL}\n[[faults]]\nfault = \"partition\"\nsplit = {{ isolate = \"leader\" }}\nat = \"3s\"\nduration = \"5s\"\n[[faults]]\nfault = \"pause\"\ntargets = \"holder\"\nevery = \"10s\"\nduration = \"2s\"\n"
        );
        let s = Scenario::load("t", &text, &[]).unwrap();
        assert_eq!(s.faults.len(), 2);
        assert_eq!(s.faults[0].at, Some(Duration::from_secs(3)));
        assert_eq!(s.faults[1].fault.verb(), "pause");
        let again = Scenario::load("again", &s.to_toml(), &[]).unwrap();
        assert_eq!(again, s);
        let bad = text.replace("every = \"10s\"", "every = \"1s\"");
        let err = Scenario::load("t", &bad, &[]).unwrap_err();
        assert!(err.contains("faults[1]"), "{err}");
    }

    /// Packet loss on a client host is refused beside a link fault (the
    /// proxies hide the host's address from the servers' rules); on servers, or alone, it runs.
    #[test]
    fn packet_loss_on_a_client_host_is_refused_beside_a_link_fault() {
        let with = |targets: &str, link: bool| {
            let link = if link {
                "[[faults]]\nfault = \"link-delay\"\ntargets = \"all\"\nlatency = \"1ms\"\n\
                 at = \"1s\"\nduration = \"1s\"\n"
            } else {
                ""
            };
            let text = format!(
                "name = \"t\"\nbackends = [\"etcd-lease\"]\nduration = \"10s\"\n\
                 [workload]\nclients = 2\nkeys = 1\nprocesses = \"workers\"\n{link}\
                 [[faults]]\nfault = \"packet-loss\"\ntargets = {targets}\nrate = 0.25\n\
                 mode = \"nth\"\nat = \"3s\"\nduration = \"5s\"\n"
            );
            Scenario::load("t.toml", &text, &[])
        };
        let client1 = "{ nodes = [\"client1\"] }";
        let err = with(client1, true).unwrap_err();
        for want in [
            "faults[1]",
            "client host client1",
            "faults[0] (link-delay)",
            "link proxy",
        ] {
            assert!(err.contains(want), "{want}: {err}");
        }
        let both = "{ nodes = [\"etcd1\", \"client2\"] }";
        assert!(
            with(both, true)
                .unwrap_err()
                .contains("client host client2")
        );
        with(client1, false).unwrap();
        with("\"all\"", true).unwrap();
        with("{ nodes = [\"etcd1\"] }", true).unwrap();
    }

    /// Regression: a fault after the run's end was accepted and never happened.
    #[test]
    fn a_fault_outside_the_fault_phase_is_an_error_naming_it() {
        let with = |fault: &str, sets: &[&str]| {
            let text = format!(
                "name = \"t\"\nbackends = [\"zk-fair\"]\nduration = \"16s\"\n\
                 [workload]\nclients = 2\nkeys = 1\n\
                 [[faults]]\nfault = \"pause\"\ntargets = \"leader\"\nat = \"1s\"\nduration = \"2s\"\n\
                 [[faults]]\n{fault}\n"
            );
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            Scenario::load("t.toml", &text, &sets)
        };
        let link = "fault = \"link-delay\"\ntargets = \"all\"\nlatency = \"100ms\"";
        // Inside: fine, up to a window ending exactly at the end of the phase.
        with(&format!("{link}\nat = \"14s\"\nduration = \"2s\""), &[]).unwrap();
        with(
            "fault = \"clock-jump\"\ntargets = \"one\"\nby = \"1s\"\nat = \"15s\"",
            &[],
        )
        .unwrap();
        with(&format!("{link}\nevery = \"50s\"\nduration = \"5s\""), &[]).unwrap();
        // Starting at or after the end; a window running past it; moved out by an override.
        for (fault, sets, want) in [
            (
                format!("{link}\nat = \"16s\"\nduration = \"2s\""),
                &[][..],
                &["faults[1]", "link-delay at 16s for 2s", "(16s)"][..],
            ),
            (
                format!("{link}\nat = \"15s\"\nduration = \"3s\""),
                &[],
                &["faults[1]", "link-delay at 15s for 3s", "ends at 18s"],
            ),
            (
                format!("{link}\nat = \"10s\""),
                &["duration=8s"],
                &["faults[1]", "link-delay at 10s", "(8s)"],
            ),
        ] {
            let err = with(&fault, sets).unwrap_err();
            assert!(want.iter().all(|w| err.contains(w)), "{want:?}: {err}");
        }
        // A run that stops by count cannot promise its faults.
        let err = with(
            &format!("{link}\nat = \"1s\""),
            &["workload.acquisitions=1000"],
        )
        .unwrap_err();
        assert!(
            err.contains("workload.acquisitions") && err.contains("faults[0] (pause at 1s for 2s)"),
            "{err}"
        );
        let err = with(
            &format!("{link}\nat = \"1s\""),
            &["workload.acquisitions=1000", "duration=0s"],
        )
        .unwrap_err();
        assert!(err.contains("workload.acquisitions"), "{err}");
    }

    #[test]
    fn the_herd_workload_needs_one_key_and_company() {
        let herd = |sets: &[&str]| {
            let mut all = vec!["workload.kind=herd".to_string(), "backends=zk-herd".into()];
            all.extend(sets.iter().map(|s| s.to_string()));
            Scenario::load("t", MINIMAL, &all)
        };
        let s = herd(&[]).unwrap();
        assert_eq!(s.workload.kind, WorkloadKind::Herd);
        assert_eq!(s.backends, vec![BackendKind::of("zk-herd")]);
        assert!(herd(&["workload.keys=2"]).unwrap_err().contains("1 key"));
        assert!(
            herd(&["workload.clients=1"])
                .unwrap_err()
                .contains("2 clients")
        );
    }

    #[test]
    fn distributions_sample_within_their_bounds() {
        let u = Dist::Uniform {
            uniform: [
                Duration::from_millis(1).into(),
                Duration::from_millis(3).into(),
            ],
        };
        assert_eq!(u.sample(0.0), Duration::from_millis(1));
        assert_eq!(u.sample(0.5), Duration::from_millis(2));
        let e = Dist::Exponential {
            exponential: Duration::from_millis(2),
        };
        assert!(e.sample(0.0).is_zero());
        assert!(e.sample(0.99) > Duration::from_millis(9));
    }
}
