//! A scenario must replay: what `lockbench run` saves (`scenario.toml`), what it sends a worker
//! process (the job line, JSON) and what `--set` rewrites must all read back as the same
//! scenario. A regression: a `link-delay` fault came back with its `jitter` doubled, and
//! every worker of `chaos-quick --seed 3` refused its job line.
//!
//! Two tests: a property test over generated scenarios (every fault verb, target, split,
//! workload kind and optional field), and every built-in scenario in `scenarios/`, with and
//! without overrides.

use lockbench_core::FindingKind;
use lockbench_core::election::{ElectionKind, FailoverKnobs, Removal};
use lockbench_core::expect::{Expect, Expectations, Kinds, Violated};
use lockbench_core::knobs::{KnobTable, Knobs};
use lockbench_core::scenario::{
    Dist, FaultSpec, KeyChoice, Processes, ResourceMode, Workload, WorkloadKind,
};
use lockbench_core::sweep::{Rates, SweepSpec};
use lockbench_core::{BackendKind, Fault, LossMode, PartitionSpec, Scenario, Targets};
use proptest::prelude::*;
use std::time::Duration;

/// The worker job line's encoding of the scenario (`lockbench_workloads::worker::Job` carries
/// it as a field of one JSON line).
fn through_job_line(s: &Scenario) -> Scenario {
    let line = serde_json::to_string(s).expect("scenario serializes to JSON");
    serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("job line does not read back: {e}\n{line}"))
}

/// What `lockbench run` saves, read back as `lockbench run saved/scenario.toml` reads it.
fn through_saved_toml(s: &Scenario, overrides: &[String]) -> Scenario {
    let text = s.to_toml();
    Scenario::load("scenario.toml", &text, overrides)
        .unwrap_or_else(|e| panic!("saved scenario does not load: {e}\n{text}"))
}

fn assert_replays(s: &Scenario) {
    assert_eq!(&through_saved_toml(s, &[]), s, "saved TOML");
    assert_eq!(&through_job_line(s), s, "job line");
    // Saved, loaded with an override (which rewrites the whole table), sent to a worker.
    let seeded = through_saved_toml(s, &["seed=3".to_string()]);
    let mut want = s.clone();
    want.seed = 3;
    assert_eq!(seeded, want, "saved TOML with --set seed=3");
    assert_eq!(through_job_line(&seeded), want, "job line after --set");
}

// ---- generators ----------------------------------------------------------------------------

/// A duration up to `max_ms`, at second, millisecond or nanosecond granularity (humantime
/// writes each differently).
fn dur(max_ms: u64) -> BoxedStrategy<Duration> {
    prop_oneof![
        (0..=max_ms / 1000).prop_map(Duration::from_secs),
        (0..=max_ms).prop_map(Duration::from_millis),
        (0..=max_ms * 1_000_000).prop_map(Duration::from_nanos),
    ]
    .boxed()
}

fn nonzero(max_ms: u64) -> BoxedStrategy<Duration> {
    dur(max_ms)
        .prop_map(|d| d.max(Duration::from_nanos(1)))
        .boxed()
}

fn text() -> BoxedStrategy<String> {
    // Quotes, backslashes, newlines and non-ASCII exercise both encoders' escaping.
    "[a-z0-9 _\"'\\\\\n\u{e9}\u{1F512}-]{0,12}".boxed()
}

fn targets() -> BoxedStrategy<Targets> {
    prop_oneof![
        Just(Targets::One),
        Just(Targets::Leader),
        Just(Targets::Followers),
        Just(Targets::Minority),
        Just(Targets::Majority),
        Just(Targets::All),
        Just(Targets::Holder),
        prop::collection::vec("[a-z][a-z0-9]{0,6}", 0..4).prop_map(Targets::Nodes),
    ]
    .boxed()
}

fn split() -> BoxedStrategy<PartitionSpec> {
    prop_oneof![
        targets().prop_map(PartitionSpec::Isolate),
        Just(PartitionSpec::Halves),
        Just(PartitionSpec::MajoritiesRing),
        Just(PartitionSpec::Bridge),
        Just(PartitionSpec::ClientsOff),
        Just(PartitionSpec::RedlockOverlap),
    ]
    .boxed()
}

fn fault() -> BoxedStrategy<Fault> {
    prop_oneof![
        split().prop_map(|split| Fault::Partition { split }),
        Just(Fault::Heal),
        targets().prop_map(|targets| Fault::Pause { targets }),
        targets().prop_map(|targets| Fault::Resume { targets }),
        targets().prop_map(|targets| Fault::Kill { targets }),
        targets().prop_map(|targets| Fault::Start { targets }),
        (targets(), dur(10_000)).prop_map(|(targets, by)| Fault::ClockJump { targets, by }),
        (targets(), dur(1_000), dur(1_000)).prop_map(|(targets, latency, jitter)| {
            Fault::LinkDelay {
                targets,
                latency,
                jitter,
            }
        }),
        targets().prop_map(|targets| Fault::LinkBlackhole { targets }),
        Just(Fault::RedisFailover),
        Just(Fault::Promote),
    ]
    .boxed()
}

/// A schedule entry that fits a fault phase of `phase` (so that it validates): `at` with an
/// optional window ending inside the phase, or `every` with optional `every_jitter` and a
/// window shorter than the period.
fn fault_spec(phase: Duration) -> BoxedStrategy<FaultSpec> {
    let phase_ns = phase.as_nanos() as u64;
    (
        fault(),
        any::<bool>(),
        0..phase_ns.max(1),
        0..=phase_ns,
        prop::option::of(any::<bool>()),
        prop::option::of(dur(60_000)),
        1..=phase_ns.max(1),
    )
        .prop_map(
            move |(fault, once, start, len, with_len, every_jitter, every)| {
                let len = len.min(phase_ns - start);
                if once {
                    FaultSpec {
                        fault,
                        at: Some(Duration::from_nanos(start)),
                        every: None,
                        every_jitter: None,
                        duration: with_len.map(|_| Duration::from_nanos(len)),
                    }
                } else {
                    FaultSpec {
                        fault,
                        at: None,
                        every: Some(Duration::from_nanos(every)),
                        every_jitter,
                        duration: with_len.map(|_| Duration::from_nanos(len % every)),
                    }
                }
            },
        )
        .boxed()
}

fn dist() -> BoxedStrategy<Dist> {
    prop_oneof![
        dur(100).prop_map(Dist::Fixed),
        (dur(100), dur(100)).prop_map(|(a, b)| Dist::Uniform {
            uniform: [a.min(b).into(), a.max(b).into()],
        }),
        dur(100).prop_map(|exponential| Dist::Exponential { exponential }),
    ]
    .boxed()
}

fn workload(kind: WorkloadKind) -> BoxedStrategy<Workload> {
    (
        (2u32..64, 1u32..16, any::<bool>(), dist(), dist()),
        (
            prop::option::of(0.001f64..1e6),
            prop::option::of(1u64..1_000_000),
            nonzero(60_000),
            prop::option::of(nonzero(10_000)),
            any::<bool>(),
            prop_oneof![Just(0.0), 0.0f64..=1.0],
        ),
    )
        .prop_map(
            move |(
                (clients, keys, per_client, hold, think),
                (rate, acquisitions, acquire_timeout, pause, workers, read_fraction),
            )| Workload {
                kind,
                clients,
                keys: if kind == WorkloadKind::Herd { 1 } else { keys },
                key_choice: if per_client {
                    KeyChoice::PerClient
                } else {
                    KeyChoice::Random
                },
                hold,
                think,
                rate,
                acquisitions,
                acquire_timeout,
                pause,
                processes: if workers {
                    Processes::Workers
                } else {
                    Processes::InProcess
                },
                read_fraction,
                renew_every: None,
                slowdown: None,
            },
        )
        .boxed()
}

/// A system's knob table as the systems' crates write theirs (durations, a fraction, text):
/// core carries the tables without knowing them, and they must replay all the same.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
struct LeaseKnobs {
    #[serde(with = "humantime_serde")]
    ttl: Duration,
    #[serde(with = "humantime_serde")]
    retry_delay: Duration,
    drift_factor: f64,
    prefix: String,
}

impl KnobTable for LeaseKnobs {
    const NAME: &'static str = "lease";
}

/// The same shape under a second name, so a scenario carries several tables in order.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
struct OtherKnobs {
    #[serde(with = "humantime_serde")]
    session_timeout: Duration,
    root: String,
}

impl KnobTable for OtherKnobs {
    const NAME: &'static str = "other";
}

fn knobs() -> BoxedStrategy<Knobs> {
    (
        prop::option::of((dur(60_000), dur(1_000), 0.0f64..0.5, text())),
        prop::option::of((dur(60_000), "/[a-z0-9]{1,8}")),
    )
        .prop_map(|(lease, other)| {
            let mut knobs = Knobs::default();
            if let Some((ttl, retry_delay, drift_factor, prefix)) = lease {
                let lease = LeaseKnobs {
                    ttl,
                    retry_delay,
                    drift_factor,
                    prefix,
                };
                knobs.update(|k: &mut LeaseKnobs| *k = lease).unwrap();
            }
            if let Some((session_timeout, root)) = other {
                let other = OtherKnobs {
                    session_timeout,
                    root,
                };
                knobs.update(|k: &mut OtherKnobs| *k = other).unwrap();
            }
            knobs
        })
        .boxed()
}

fn failover_knobs() -> BoxedStrategy<FailoverKnobs> {
    let removal = prop_oneof![
        Just(Removal::Resign),
        Just(Removal::Kill),
        Just(Removal::Pause),
        Just(Removal::ServerKill),
        Just(Removal::Partition),
    ];
    (
        prop::collection::vec(removal, 1..4),
        1u32..5,
        dur(2_000),
        nonzero(60_000),
        prop::option::of(nonzero(60_000)),
        nonzero(1_000),
    )
        .prop_map(
            |(removals, rounds, interval, round_timeout, pause, poll)| FailoverKnobs {
                removals,
                rounds,
                interval,
                round_timeout: round_timeout.max(Duration::from_secs(61)),
                pause,
                poll,
            },
        )
        .boxed()
}

fn sweep() -> BoxedStrategy<Option<SweepSpec>> {
    let rates = prop_oneof![
        Just(Rates::Auto("auto".into())),
        prop::collection::vec(0.5f64..1e5, 1..4).prop_map(Rates::List),
    ];
    prop::option::of(
        (
            prop::collection::vec("workload\\.(keys|clients)=[1-9](,[1-9]){0,2}", 0..3),
            rates,
            nonzero(1_000),
            (0.001f64..0.999, 0.001f64..0.999, 0.001f64..9.9),
            (nonzero(5_000), dur(1_000), 2u32..20),
        )
            .prop_map(
                |(vary, rates, slo_p99, (tolerance, max_error_rate, resolution), step)| SweepSpec {
                    vary,
                    rates,
                    slo_p99,
                    tolerance,
                    max_error_rate,
                    resolution,
                    step: step.0,
                    step_warmup: step.1,
                    max_steps: step.2,
                },
            ),
    )
    .boxed()
}

/// An `[expect]` table over `backends`: `safe`/`violated` and `fenced`/`damaged` each split
/// the backends they name (a backend in both of a pair is an error), throughput floors on some,
/// sometimes `all`.
fn expectations(backends: Vec<BackendKind>) -> BoxedStrategy<Expectations> {
    let n = backends.len();
    (
        prop::collection::vec((0u8..3, 0u8..3, prop::option::of(0.0f64..1e6)), n),
        any::<bool>(),
        prop::option::of(0.0f64..1e3),
        any::<bool>(),
    )
        .prop_map(move |(picks, all_safe, floor, by_kind)| {
            let mut e = Expectations::default();
            let mut violated = Vec::new();
            for (b, (verdict, fencing, min)) in backends.iter().zip(picks) {
                let name = b.name().to_string();
                match verdict {
                    1 if !all_safe => e.safe.push(name.clone()),
                    2 if !all_safe => violated.push(name.clone()),
                    _ => {}
                }
                match fencing {
                    1 => e.fenced.push(name.clone()),
                    2 => e.damaged.push(name.clone()),
                    _ => {}
                }
                if let Some(min) = min {
                    e.min_throughput.insert(name, min);
                }
            }
            if all_safe {
                e.safe = vec!["all".into()];
            }
            e.violated = if by_kind && !violated.is_empty() {
                let kinds = || vec!["mutex".to_string(), "foreign_release?".to_string()];
                Violated::ByKind(violated.into_iter().map(|b| (b, kinds())).collect())
            } else {
                Violated::Any(violated)
            };
            if let Some(floor) = floor {
                e.min_throughput.insert("all".into(), floor);
            }
            e
        })
        .boxed()
}

/// Recipe names: core knows none, so any name round-trips (the registry checks them).
const NAMES: [&str; 6] = [
    "zk-fair",
    "etcd-lease",
    "redis-setnx",
    "redlock",
    "pg-advisory",
    "x",
];

fn names() -> Vec<BackendKind> {
    NAMES.iter().map(|n| BackendKind::named(n)).collect()
}

/// Election recipe names: as with [`NAMES`], any name round-trips.
fn election_names() -> Vec<ElectionKind> {
    let names = [
        "zk-election",
        "etcd-lease-election",
        "redis-lease-election",
        "y",
    ];
    names.into_iter().map(ElectionKind::named).collect()
}

prop_compose! {
    fn lock_scenario()(
        kind in prop_oneof![
            Just(WorkloadKind::Contention),
            Just(WorkloadKind::Fencing),
            Just(WorkloadKind::Herd),
        ],
        duration in nonzero(120_000),
    )(
        workload in workload(kind),
        faults in prop::collection::vec(fault_spec(duration), 0..5),
        backends in prop::sample::subsequence(names(), 1..=NAMES.len()),
        duration in Just(duration),
        head in (text(), text(), 0..=i64::MAX as u64, dur(5_000), any::<bool>()),
        observe_server in any::<bool>(),
        tail in (knobs(), nonzero(30_000), nonzero(30_000), sweep()),
        expect in prop::sample::subsequence(names(), 0..=NAMES.len())
            .prop_flat_map(expectations),
    ) -> Scenario {
        let (name, description, seed, warmup, unfenced) = head;
        let (knobs, recovery, stall_alarm, sweep) = tail;
        let mut workload = workload;
        if !faults.is_empty() {
            // A run that stops by count has no fault phase it can promise (see validate).
            workload.acquisitions = None;
        }
        Scenario {
            name: format!("n{name}"),
            description,
            seed,
            backends,
            duration,
            warmup,
            steady: lockbench_core::steady::Steady::default(),
            workload,
            resource: if unfenced { ResourceMode::Unfenced } else { ResourceMode::Fenced },
            workers: None,
            knobs,
            recovery,
            stall_alarm,
            observe_server,
            faults,
            elections: Vec::new(),
            failover: FailoverKnobs::default(),
            sweep,
            expect,
        }
    }
}

prop_compose! {
    fn failover_scenario()(
        base in lock_scenario(),
        elections in prop::sample::subsequence(election_names(), 1..=election_names().len()),
        failover in failover_knobs(),
    ) -> Scenario {
        Scenario {
            backends: Vec::new(),
            faults: Vec::new(),
            elections,
            failover,
            workload: Workload { kind: WorkloadKind::Failover, ..base.workload.clone() },
            ..base
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn generated_scenarios_replay_through_saved_toml_and_job_line(
        s in prop_oneof![3 => lock_scenario(), 1 => failover_scenario()]
    ) {
        prop_assert_eq!(s.validate(), Ok(()), "the generator makes valid scenarios");
        assert_replays(&s);
    }
}

// ---- the built-in scenarios ----------------------------------------------------------------

/// Every file of `scenarios/` (the built-ins `bench/cli/src/builtin.rs` compiles in).
fn builtins() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios");
    let mut all: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("scenarios/ folder")
        .map(|e| e.expect("scenarios/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("scenario file");
            (p.display().to_string(), text)
        })
        .collect();
    all.sort();
    all
}

#[test]
fn every_builtin_scenario_replays_with_and_without_overrides() {
    let all = builtins();
    assert!(all.len() >= 14, "found only {} scenarios", all.len());
    let overrides = [
        vec![],
        vec!["seed=3".to_string()],
        vec!["seed=7".into(), "warmup=2s".into(), "stall_alarm=4s".into()],
        vec!["workload.acquire_timeout=9s".into(), "redis.ttl=2s".into()],
    ];
    for (path, text) in &all {
        for sets in &overrides {
            let s = Scenario::load(path, text, sets)
                .unwrap_or_else(|e| panic!("{path} with {sets:?}: {e}"));
            assert_replays(&s);
        }
    }
}

#[test]
fn a_link_delay_keeps_its_jitter_and_a_repeating_entry_its_own() {
    let text = r#"
name = "t"
backends = ["etcd-lease"]
duration = "60s"
[workload]
clients = 2
keys = 1
[[faults]]
fault = "link-delay"
targets = "all"
latency = "100ms"
jitter = "30ms"
every = "20s"
every_jitter = "5s"
duration = "2s"
"#;
    let s = Scenario::load("t", text, &[]).unwrap();
    let f = &s.faults[0];
    assert_eq!(
        f.fault,
        Fault::LinkDelay {
            targets: Targets::All,
            latency: Duration::from_millis(100),
            jitter: Duration::from_millis(30),
        }
    );
    assert_eq!(f.every_jitter, Some(Duration::from_secs(5)));
    assert_replays(&s);
    // A field no verb and no schedule has is an error naming it, not silently dropped.
    let err = Scenario::load("t", &text.replace("every_jitter", "evry_jitter"), &[]).unwrap_err();
    assert!(err.contains("evry_jitter"), "{err}");
}

/// Every built-in scenario states what its results must show (`docs/reading-results.md`'s promise
/// for it), so `lockbench run <name>` can gate a CI job on its exit code.
#[test]
fn every_builtin_scenario_carries_its_expectations() {
    let tokens = [
        "zk-fair",
        "zk-curator",
        "etcd-lease",
        "etcd-lockapi",
        "redis-setnx",
    ];
    let no_lease = ["pg-advisory", "pg-try-advisory", "pg-advisory-xact"];
    for (path, text) in builtins() {
        let s = Scenario::load(&path, &text, &[]).unwrap();
        let e = &s.expect;
        assert!(!e.is_empty(), "{path} has no [expect] table");
        let units = s.unit_names();
        let mut checks = e.resolve(&units);
        // Adapters' expectations are for `--set backends=lib:...` (docs/adapter-protocol.md).
        checks.not_in_run.retain(|(_, b)| !b.starts_with("lib:"));
        assert!(
            checks.not_in_run.is_empty(),
            "{path}: {:?}",
            checks.not_in_run
        );
        let has = |b: &str, name: &str| {
            checks
                .checks
                .iter()
                .any(|(x, c)| x == b && c.name() == name && c != &Expect::Safe { implicit: true })
        };
        // Every built-in `violated` names its kinds: a kind nobody expected (a release that
        // deletes another client's lock) then fails the run even where a violation is expected.
        // (watchdog's kinds are not measured yet: its bare list still means any violation.)
        for (b, c) in checks.checks.iter().filter(|_| s.name != "watchdog") {
            if let Expect::Violated(kinds) = c {
                let kinds = kinds
                    .as_ref()
                    .unwrap_or_else(|| panic!("{path}: {b}'s violation names no kind"));
                let broken = b.contains("broken");
                // etcd's Lock API grants a waiter whose lease expired, and that loser's Unlock
                // of its expired key then succeeds after the other grant: the server's doing,
                // not a release that ignores its compare (docs/backends.md).
                let server_grants_twice = b == "etcd-lockapi";
                assert!(
                    broken || server_grants_twice || !kinds.allows(FindingKind::ForeignRelease),
                    "{path}: {b}"
                );
            }
        }
        match s.name.as_str() {
            "broken-recipe" => {
                assert!(has("redis-broken-nonx", "violated") && has("redis-setnx", "safe"));
                assert!(has("zk-broken-rwlock", "violated") && s.workload.read_fraction > 0.0);
            }
            "fencing" | "chaos-quick" => {
                // An advisory lock has no lease: the paused holder keeps it, nobody overlaps.
                for b in &units {
                    let kind = if no_lease.contains(&b.as_str()) {
                        "safe"
                    } else {
                        "violated"
                    };
                    assert!(has(b, kind), "{path}: {b} should be {kind}");
                }
                // chaos-quick's leader faults may make etcd's Lock API reuse a revision
                // (etcd-io/etcd#9921), and then a lost-lock write can pass its fencing.
                let lockapi_under_leader_faults =
                    |b: &str| s.name == "chaos-quick" && b == "etcd-lockapi";
                for b in tokens {
                    assert_eq!(
                        has(b, "fenced"),
                        !lockapi_under_leader_faults(b),
                        "{path}: {b} fenced"
                    );
                }
                assert!(has("redlock", "damaged"), "{path}");
                let mutex_only = Expect::Violated(Some(Kinds {
                    must: vec![FindingKind::Mutex],
                    may: vec![],
                }));
                // There, and only there: `token_reuse?` and what it lets through.
                for b in tokens {
                    let rule = if lockapi_under_leader_faults(b) {
                        Expect::Violated(Some(Kinds {
                            must: vec![FindingKind::Mutex],
                            may: vec![
                                FindingKind::TokenReuse,
                                FindingKind::WriteAfterLockLostAccepted,
                            ],
                        }))
                    } else {
                        mutex_only.clone()
                    };
                    assert!(
                        checks.checks.contains(&(b.to_string(), rule)),
                        "{path}: {b}"
                    );
                }
            }
            "chaos-full" => assert!(has("redlock", "damaged"), "{path}"),
            // Packet loss, random and nth, on every server's links; alone it broke no recipe.
            "chaos-loss" => {
                assert!(units.iter().all(|b| has(b, "safe")), "{path}");
                let modes: Vec<LossMode> = s
                    .faults
                    .iter()
                    .filter_map(|f| match &f.fault {
                        Fault::PacketLoss { targets, mode, .. } if *targets == Targets::All => {
                            Some(*mode)
                        }
                        _ => None,
                    })
                    .collect();
                assert!(
                    modes.contains(&LossMode::Random) && modes.contains(&LossMode::Nth),
                    "{path}: {modes:?}"
                );
            }
            // The long pause outlives every lock.
            "watchdog" => assert!(units.iter().all(|b| has(b, "violated")), "{path}"),
            "redis-failover" => assert!(has("redis-sentinel", "violated"), "{path}"),
            // A renewal kept on a minority: Redlock ends the hold, the broken variant does not.
            "redlock-minority" => {
                assert!(has("redlock", "safe"), "{path}");
                assert!(has("redlock-broken-renew", "violated"), "{path}");
            }
            // A server's clock jumps past the lock's life while the clients reach different
            // majorities: Redlock's quorum does not hold.
            "redlock-clock" => assert!(has("redlock", "violated"), "{path}"),
            // Redis times a key's life on its wall clock; ZooKeeper's sessions and
            // PostgreSQL's advisory locks do not read it.
            "chaos-clock" => {
                for b in &units {
                    let kind = if b.starts_with("redis") || b == "redlock" {
                        "violated"
                    } else {
                        "safe"
                    };
                    assert!(has(b, kind), "{path}: {b} should be {kind}");
                }
            }
            // A stalled or slow disk delays every system's grants; none grants twice.
            "chaos-disk" => assert!(units.iter().all(|b| has(b, "safe")), "{path}"),
            // Each window alone breaks no recipe but etcd's Lock API, which grants a waiter
            // whose lease expired.
            "verdict-faults" => {
                for b in &units {
                    let kind = if b == "etcd-lockapi" {
                        "violated"
                    } else {
                        "safe"
                    };
                    assert!(has(b, kind), "{path}: {b} should be {kind}");
                }
            }
            // Advisory locks are not replicated: the promoted replica grants them at once.
            "pg-failover" => assert!(units.iter().all(|b| has(b, "violated")), "{path}"),
            "soak" => {
                // Its kills restart the single, unpersisted Redis empty: tokens are reused.
                let single_redis = ["redis-setnx", "redis-pubsub"];
                for b in &units {
                    let kind = if single_redis.contains(&b.as_str()) {
                        "violated"
                    } else {
                        "safe"
                    };
                    assert!(has(b, kind), "{path}: {b} should be {kind}");
                }
            }
            _ => assert!(units.iter().all(|b| has(b, "safe")), "{path}"),
        }
    }
}
