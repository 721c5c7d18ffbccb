//! What the verdict suite runs: one scenario per part, made from the built-in scenarios with
//! the suite's backends, and sized to the time it is given.
//!
//! The parts with faults keep their timelines (a lock must outlive its holder's pause for the
//! pause to mean anything); the others (the shapes' measured windows and warm-up bound, the
//! herd, the knee search's steps) are scaled by one factor, the largest that fits the budget.
//! A budget too small even for the fault parts is refused with the smallest that fits.

use super::super::run::load_named_scenario;
use lockbench_core::sweep::SweepSpec;
use lockbench_core::{BackendKind, Leadership, Scenario};
use lockbench_results::decision::{Part, SHAPES, Subject};
use std::collections::BTreeMap;
use std::time::Duration;

/// The time a suite may take unless told otherwise.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(25 * 60);

/// Measured window of a shape and of the herd at full scale.
const MEASURED: Duration = Duration::from_secs(5);
/// Bound of a shape's warm-up at full scale (a warm cluster settles in its first window).
const STEADY_MAX: Duration = Duration::from_secs(20);
/// Knee search steps at full scale, and each step's length.
const KNEE_STEPS: u32 = 6;
const KNEE_STEP: Duration = Duration::from_secs(2);
/// The knee's objective and load.
const KNEE_CLIENTS: u32 = 16;
/// What a backend's run costs beyond its timeline: clients connecting, the analysis, the
/// report; worker processes add their start.
const PER_RUN: Duration = Duration::from_secs(2);
const PER_WORKERS: Duration = Duration::from_secs(3);
/// A failover's heal: the old leader re-cloned from the new one and rejoined.
const REJOIN: Duration = Duration::from_secs(20);
/// The smallest scale: below it a shape's window is too short to say anything.
const MIN_SCALE: f64 = 0.2;
/// How finely the scale is searched.
const SCALE_STEP: f64 = 0.05;

/// One part, ready to run.
pub struct Planned {
    /// Which part.
    pub part: Part,
    /// Its scenario (for the knee: the base of its search).
    pub scenario: Scenario,
    /// The knee's search (only for [`Part::Knee`]).
    pub sweep: Option<SweepSpec>,
    /// The suite's backends this part does not run, each with why.
    pub skipped: BTreeMap<String, String>,
    /// What it should take.
    pub estimate: Duration,
}

/// The whole suite.
pub struct Plan {
    /// The backends, in the order given.
    pub subjects: Vec<Subject>,
    /// The parts, in the order they run.
    pub parts: Vec<Planned>,
    /// The factor the scalable parts were sized by (1 = full length).
    pub scale: f64,
    /// What the whole suite should take.
    pub estimate: Duration,
}

/// Plans the suite for `budget`: the backends come from `sets` over `quick`'s (`--set
/// backends=...`, lock libraries included: `lib:curator`), grouped by system; every other
/// `--set` applies to every part.
pub fn plan(sets: &[String], seed: Option<u64>, budget: Duration) -> anyhow::Result<Plan> {
    let base = load_named_scenario("quick", sets, seed)?;
    let mut backends = base.backends.clone();
    // A lock library's row beside the recipes of the system it uses.
    backends.sort_by_key(|&kind| {
        let system = lockbench_registry::system_of(kind).name();
        lockbench_registry::SYSTEMS
            .iter()
            .position(|s| s.name() == system)
    });
    let full = plan_at(sets, seed, &backends, 1.0)?;
    if full.estimate <= budget {
        return Ok(full);
    }
    let least = plan_at(sets, seed, &backends, MIN_SCALE)?;
    if least.estimate > budget {
        let fixed: Duration = least
            .parts
            .iter()
            .filter(|p| !scales(p.part))
            .map(|p| p.estimate)
            .sum();
        anyhow::bail!(
            "--budget {}: too short for {} backend(s): the fault parts alone take about {} and \
             the suite at its shortest about {}; give at least --budget {}, or name fewer \
             backends with --set backends=...",
            humantime::format_duration(budget),
            backends.len(),
            seconds(fixed),
            seconds(least.estimate),
            whole_minutes(least.estimate),
        );
    }
    // The largest scale that fits, from the top down in steps of 5 %: the estimate follows
    // the scale only roughly (floors, rounded knee steps).
    let mut scale = 1.0 - SCALE_STEP;
    while scale > MIN_SCALE {
        let plan = plan_at(sets, seed, &backends, scale)?;
        if plan.estimate <= budget {
            return Ok(plan);
        }
        scale -= SCALE_STEP;
    }
    Ok(least)
}

/// Whole seconds (`4m 10s`).
pub fn seconds(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

/// Whole minutes, rounded up, as `--budget` takes them (`5m`).
pub fn whole_minutes(d: Duration) -> String {
    format!("{}m", d.as_secs().div_ceil(60))
}

/// `true` for a part whose length follows the scale.
fn scales(part: Part) -> bool {
    match part {
        Part::Shape(_) | Part::Herd | Part::Knee => true,
        Part::HolderPause | Part::Faults | Part::Failover => false,
    }
}

fn plan_at(
    sets: &[String],
    seed: Option<u64>,
    backends: &[BackendKind],
    scale: f64,
) -> anyhow::Result<Plan> {
    let scaled = |d: Duration, floor: Duration| d.mul_f64(scale).max(floor);
    let mut parts = Vec::new();
    for shape in SHAPES {
        let mut s = load_named_scenario("quick", sets, seed)?;
        s.name = format!("verdict-{}", Part::Shape(shape).dir_name());
        s.workload.clients = shape.clients;
        s.workload.keys = shape.keys;
        s.duration = scaled(MEASURED, Duration::from_secs(1));
        if s.steady.enabled() {
            // `--set steady.max=0s` turns the warm-up off here too.
            s.steady.max = scaled(STEADY_MAX, s.steady.round * s.steady.window * 2);
        }
        parts.push(part(Part::Shape(shape), s, backends, |_| None));
    }
    let fencing = load_named_scenario("fencing", sets, seed)?;
    parts.push(part(Part::HolderPause, fencing, backends, |_| None));
    let faults = load_named_scenario("verdict-faults", sets, seed)?;
    parts.push(part(Part::Faults, faults, backends, |_| None));
    let failover = load_named_scenario("pg-failover", sets, seed)?;
    parts.push(part(Part::Failover, failover, backends, no_promotion));
    let mut herd = load_named_scenario("herd", sets, seed)?;
    herd.duration = scaled(MEASURED, Duration::from_secs(2));
    parts.push(part(Part::Herd, herd, backends, |_| None));
    let mut knee = load_named_scenario("capacity", sets, seed)?;
    knee.workload.clients = KNEE_CLIENTS;
    knee.workload.keys = 1;
    let mut spec = knee.sweep.clone().unwrap_or_default();
    spec.vary.clear();
    spec.max_steps = ((KNEE_STEPS as f64 * scale).round() as u32).max(3);
    spec.step = scaled(KNEE_STEP, Duration::from_secs(1));
    spec.validate().map_err(anyhow::Error::msg)?;
    knee.duration = spec.step;
    knee.warmup = spec.step_warmup;
    knee.faults.clear();
    knee.workload.acquisitions = None;
    let mut planned = part(Part::Knee, knee, backends, |_| None);
    planned.estimate = (spec.step + spec.step_warmup + PER_RUN / 2)
        * spec.max_steps
        * planned.scenario.backends.len() as u32;
    planned.sweep = Some(spec);
    parts.push(planned);
    let estimate = parts.iter().map(|p| p.estimate).sum();
    let subjects = backends
        .iter()
        .map(|&kind| Subject {
            backend: kind.name().to_string(),
            broken: lockbench_registry::recipe(kind).is_some_and(|r| r.broken),
            no_leader: match lockbench_registry::system_of(kind)
                .leadership(lockbench_registry::group_of(kind))
            {
                Leadership::None(why) => Some(why.to_string()),
                Leadership::Elected | Leadership::Sole | Leadership::Watched => None,
            },
        })
        .collect();
    Ok(Plan {
        subjects,
        parts,
        scale,
        estimate,
    })
}

/// The part `part` running `scenario` on those of `backends` that `skip` does not set aside.
fn part(
    part: Part,
    mut scenario: Scenario,
    backends: &[BackendKind],
    skip: impl Fn(BackendKind) -> Option<String>,
) -> Planned {
    let mut skipped = BTreeMap::new();
    scenario.backends = backends
        .iter()
        .copied()
        .filter(|&kind| match skip(kind) {
            Some(why) => {
                skipped.insert(kind.name().to_string(), why);
                false
            }
            None => true,
        })
        .collect();
    let estimate = per_backend(&scenario, part) * scenario.backends.len() as u32;
    Planned {
        part,
        scenario,
        sweep: None,
        skipped,
        estimate,
    }
}

/// What one backend's run of `s` should take.
fn per_backend(s: &Scenario, part: Part) -> Duration {
    // Two windows of rounds at least (one is compared with the one before), each round with
    // its clients' start: measured 7.6-10.1 s for 6 rounds of 1 s on a warm cluster.
    let steady = if s.steady.enabled() {
        (s.steady.round * s.steady.window * 2).mul_f64(1.3)
    } else {
        Duration::ZERO
    };
    let workers = if lockbench_runner::placement::uses_workers(s) {
        PER_WORKERS
    } else {
        Duration::ZERO
    };
    let rejoin = if part == Part::Failover {
        REJOIN
    } else {
        Duration::ZERO
    };
    let recovery = if s.faults.is_empty() {
        Duration::ZERO
    } else {
        s.recovery
    };
    s.warmup + s.duration + recovery + steady + PER_RUN + workers + rejoin
}

/// Why `kind` has no failover part: its system cannot promote a replica.
fn no_promotion(kind: BackendKind) -> Option<String> {
    let system = lockbench_registry::system_of(kind);
    system.promote("").is_none().then(|| {
        format!(
            "{} has no replica to promote; its leader's faults are the leader pause and \
             partition",
            system.name()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(backends: &str) -> Vec<String> {
        vec![format!("backends={backends}")]
    }

    #[test]
    fn the_default_suite_fits_its_default_budget_at_full_or_scaled_length() {
        let plan = plan(&[], None, DEFAULT_BUDGET).unwrap();
        assert!(plan.estimate <= DEFAULT_BUDGET, "{:?}", plan.estimate);
        let quick = load_named_scenario("quick", &[], None).unwrap();
        assert_eq!(plan.subjects.len(), quick.backends.len());
        assert_eq!(plan.parts.len(), 8);
        // The fault parts keep their timelines whatever the scale.
        let pause = plan.parts.iter().find(|p| p.part == Part::HolderPause);
        assert_eq!(pause.unwrap().scenario.duration, Duration::from_secs(10));
    }

    #[test]
    fn a_shorter_budget_shrinks_the_measured_windows_and_a_too_short_one_names_the_least() {
        let full = plan(&sets("redis-setnx,zk-fair"), None, DEFAULT_BUDGET).unwrap();
        let short = plan(&sets("redis-setnx,zk-fair"), None, Duration::from_secs(220)).unwrap();
        assert!(short.scale < full.scale, "{} {}", short.scale, full.scale);
        assert!(short.estimate <= Duration::from_secs(220));
        let shape = |p: &Plan| p.parts[0].scenario.duration;
        assert!(shape(&short) < shape(&full));
        let e = plan(&sets("redis-setnx,zk-fair"), None, Duration::from_secs(60))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("--budget 1m: too short for 2 backend(s)") && e.contains("give at least"),
            "{e}"
        );
    }

    #[test]
    fn failover_runs_where_a_replica_can_be_promoted_and_says_why_elsewhere() {
        let plan = plan(&sets("pg-advisory,redlock,zk-fair"), None, DEFAULT_BUDGET).unwrap();
        let failover = plan
            .parts
            .iter()
            .find(|p| p.part == Part::Failover)
            .unwrap();
        let ran: Vec<&str> = failover
            .scenario
            .backends
            .iter()
            .map(|k| k.name())
            .collect();
        assert_eq!(ran, ["pg-advisory"]);
        assert!(failover.skipped["zk-fair"].contains("zookeeper has no replica to promote"));
        // Rows grouped by system, in the registry's order; Redlock's servers have no leader.
        let rows: Vec<&str> = plan.subjects.iter().map(|s| s.backend.as_str()).collect();
        assert_eq!(rows, ["zk-fair", "redlock", "pg-advisory"]);
        assert!(plan.subjects[1].no_leader.is_some());
        assert!(plan.subjects[0].no_leader.is_none());
    }
}
