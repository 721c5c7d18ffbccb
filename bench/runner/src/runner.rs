//! [`Runner`]: the one path every run takes. `lockbench run`, each `--repeat` repetition,
//! each sweep step and each election recipe of the failover workload go through
//! [`Runner::run_unit`]: make the unit's `RunControl` the one Ctrl-C stops, tell the observer,
//! run the lock backend or election recipe, turn an error into a `status = "error"` result
//! naming it, tell the observer. Before this, those steps were written four times, and the
//! copies had drifted apart (the progress bar counted `recovery` in one and not in another).

use crate::observer::{Observer, Started, UnitKind};
use crate::session::{CtrlC, Servers};
use lockbench_core::{BackendKind, ElectionKind, Scenario, Seed};
use lockbench_report::RunDir;
use lockbench_results::model::Repetition;
use lockbench_results::{BackendResult, RunResults, Status};
use lockbench_workloads::RunControl;
use std::sync::Arc;
use std::time::Duration;

/// One unit of work: a lock backend, or an election recipe (failover workload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A lock backend under the scenario's workload.
    Lock(BackendKind),
    /// A leader-election recipe under the failover workload.
    Election(ElectionKind),
}

impl Unit {
    /// The backend's or recipe's name.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Lock(k) => k.name(),
            Unit::Election(k) => k.name(),
        }
    }

    fn kind(self) -> UnitKind {
        match self {
            Unit::Lock(_) => UnitKind::Lock,
            Unit::Election(_) => UnitKind::Election,
        }
    }
}

/// Runs scenarios on prepared servers, with Ctrl-C armed, telling an observer.
pub struct Runner {
    servers: Servers,
    observer: Arc<dyn Observer>,
    ctrl_c: CtrlC,
    repeat: u32,
}

impl Runner {
    /// A runner on `servers`. Arms Ctrl-C: from now on it stops the unit that is running
    /// (`what` names it in the message: `backend`, `step`) and the caller sees
    /// [`Runner::interrupted`].
    pub fn new(servers: Servers, observer: Arc<dyn Observer>, what: &'static str) -> Runner {
        Runner {
            servers,
            observer,
            ctrl_c: CtrlC::watch(what),
            repeat: 1,
        }
    }

    /// Runs each lock backend `n` times in a row ([`Runner::run`]): repetition k with seed
    /// + k - 1, into `repeats/<backend>-<k>/`, every repetition's figures in `repetitions`.
    pub fn with_repeat(mut self, n: u32) -> Runner {
        self.repeat = n.max(1);
        self
    }

    /// The servers.
    pub fn servers(&self) -> &Servers {
        &self.servers
    }

    /// The observer.
    pub fn observer(&self) -> &dyn Observer {
        self.observer.as_ref()
    }

    /// `true` once Ctrl-C was pressed.
    pub fn interrupted(&self) -> bool {
        self.ctrl_c.pressed()
    }

    /// A `results.json` with no results yet, for scenario `name`.
    pub async fn header(&self, name: &str, seed: u64) -> RunResults {
        self.servers.results_header(name, seed).await
    }

    /// Removes the run's client hosts and stops a managed cluster this command started.
    pub async fn finish(self, what: &str) {
        drop(self.ctrl_c);
        self.servers.finish(what).await;
    }

    /// Runs every lock backend (with its repetitions) and then every election recipe of
    /// `scenario` into `run_dir`, writing `results.json` after each; stops early on Ctrl-C.
    pub async fn run(&self, scenario: &Scenario, run_dir: &RunDir) -> anyhow::Result<RunResults> {
        let mut results = self.header(&scenario.name, scenario.seed).await;
        run_dir.write_results(&results)?;
        for &kind in &scenario.backends {
            if self.interrupted() {
                break;
            }
            let (steady, failed) = if scenario.steady.enabled() {
                let (warmup, failed) = self.warm_up(kind, scenario, run_dir).await;
                if self.interrupted() {
                    break;
                }
                (Some(warmup), failed)
            } else {
                (None, None)
            };
            let mut result = match failed {
                Some(failed) => self.report_unit(Unit::Lock(kind), scenario, failed),
                None => {
                    self.run_unit(Unit::Lock(kind), scenario, run_dir, kind.name())
                        .await
                }
            };
            result.steady = steady;
            if self.repeat > 1 && result.status == Status::Ok {
                self.repetitions(kind, &mut result, scenario, run_dir, &results)
                    .await;
            }
            results.results.push(result);
            results.scorecard = lockbench_results::scorecard::of(&results.results);
            run_dir.write_results(&results)?;
        }
        if self.repeat > 1 && !scenario.elections.is_empty() {
            self.observer.note(
                "--repeat applies to lock backends; each election recipe runs once (raise failover.rounds for more samples)",
            );
        }
        for &election in &scenario.elections {
            if self.interrupted() {
                break;
            }
            let result = self
                .run_unit(Unit::Election(election), scenario, run_dir, election.name())
                .await;
            results.results.push(result);
            run_dir.write_results(&results)?;
        }
        results.complete = !self.interrupted();
        results.environment.load_average_end = lockbench_results::environment::load_average_now();
        results.expectations =
            lockbench_results::expect::evaluate(&scenario.expect, &results.results);
        run_dir.write_results(&results)?;
        Ok(results)
    }

    /// Runs one unit into `run_dir` (history, histograms) and returns its result; an error
    /// becomes a `status = "error"` result naming it.
    pub async fn run_unit(
        &self,
        unit: Unit,
        scenario: &Scenario,
        run_dir: &RunDir,
        label: &str,
    ) -> BackendResult {
        let control = RunControl::new(scenario.workload.clients);
        self.observer.started(&Started {
            label,
            kind: unit.kind(),
            scenario,
            planned: planned(scenario),
            control: &control,
        });
        let result = self
            .execute(unit, scenario, run_dir, control, &self.observer)
            .await;
        self.observer.finished(label, unit.kind(), &result);
        result
    }

    /// Tells the observer of a unit that ended before its run (its warm-up failed) as if it
    /// had run, and gives back its result.
    fn report_unit(&self, unit: Unit, scenario: &Scenario, result: BackendResult) -> BackendResult {
        let control = RunControl::new(scenario.workload.clients);
        self.observer.started(&Started {
            label: unit.name(),
            kind: unit.kind(),
            scenario,
            planned: planned(scenario),
            control: &control,
        });
        control.stop.send_replace(true);
        self.observer.finished(unit.name(), unit.kind(), &result);
        result
    }

    /// Runs one unit as [`Runner::run_unit`] does, telling the observer nothing about it: a
    /// warm-up round. Ctrl-C still stops it.
    pub(crate) async fn run_quietly(
        &self,
        unit: Unit,
        scenario: &Scenario,
        run_dir: &RunDir,
    ) -> BackendResult {
        let control = RunControl::new(scenario.workload.clients);
        let silent: Arc<dyn Observer> = Arc::new(crate::observer::Silent);
        self.execute(unit, scenario, run_dir, control, &silent)
            .await
    }

    /// Runs `unit` under `control` (the one Ctrl-C stops), reporting to `observer`; an error
    /// becomes a `status = "error"` result naming it.
    async fn execute(
        &self,
        unit: Unit,
        scenario: &Scenario,
        run_dir: &RunDir,
        control: RunControl,
        observer: &Arc<dyn Observer>,
    ) -> BackendResult {
        self.ctrl_c.set_current(&control);
        let scenario = &scenario.for_backend(unit.name());
        let (endpoints, env) = (&self.servers.endpoints, &self.servers.env);
        let outcome = match unit {
            Unit::Lock(kind) => {
                crate::dispatch::run_backend(
                    kind, scenario, endpoints, run_dir, control, env, observer,
                )
                .await
            }
            Unit::Election(kind) => {
                let hosts = lockbench_failover::Hosts {
                    commands: env.worker_commands(),
                    managed_state: env.managed_state(),
                };
                let watch = Watched(observer.as_ref());
                lockbench_failover::run_election(
                    kind, scenario, endpoints, run_dir, &hosts, control, &watch,
                )
                .await
            }
        };
        outcome.unwrap_or_else(|e| {
            BackendResult::failed(unit.name(), &scenario.workload, format!("{e:#}"))
        })
    }

    /// Runs one unit alone in its own directory `dir` (a repetition, a sweep step): writes
    /// its `scenario.toml`, runs it, and writes a `results.json` holding only its result,
    /// with `header`'s fields.
    pub async fn run_alone(
        &self,
        unit: Unit,
        scenario: &Scenario,
        dir: &RunDir,
        header: &RunResults,
        label: &str,
    ) -> anyhow::Result<BackendResult> {
        dir.write_scenario(&scenario.to_toml())?;
        let result = self.run_unit(unit, scenario, dir, label).await;
        let mut own = header.clone();
        own.scenario = scenario.name.clone();
        own.seed = scenario.seed;
        own.complete = true;
        own.results = vec![result.clone()];
        own.scorecard = None;
        own.capacity = None;
        dir.write_results(&own)?;
        Ok(result)
    }

    /// Repetitions 2..=n of `first`'s backend, recorded with `first` in `first.repetitions`.
    /// Stops early when interrupted; a failed repetition is recorded with its status (compare
    /// ignores it) and does not stop the others.
    async fn repetitions(
        &self,
        kind: BackendKind,
        first: &mut BackendResult,
        scenario: &Scenario,
        run_dir: &RunDir,
        header: &RunResults,
    ) {
        let n = self.repeat;
        first.repetitions = vec![Repetition::of(first)];
        for k in 2..=n {
            if self.interrupted() {
                break;
            }
            let mut s = scenario.clone();
            s.seed = Seed(scenario.seed).repetition(k).0;
            s.backends = vec![kind];
            let sub = run_dir
                .path()
                .join("repeats")
                .join(format!("{}-{k}", first.backend));
            let dir = match RunDir::create(run_dir.path(), &s.name, Some(&sub)) {
                Ok(d) => d,
                Err(e) => {
                    self.observer.warning(&format!("repetition {k}: {e:#}"));
                    break;
                }
            };
            let label = format!("{} #{k}/{n}", first.backend);
            let rep = match self
                .run_alone(Unit::Lock(kind), &s, &dir, header, &label)
                .await
            {
                Ok(r) => Repetition::of(&r),
                Err(e) => {
                    self.observer.warning(&format!("repetition {k}: {e:#}"));
                    continue;
                }
            };
            first.repetitions.push(rep);
        }
    }
}

/// A unit's planned length on the run clock: warm-up, measured window and, with faults, the
/// recovery.
fn planned(scenario: &Scenario) -> Duration {
    let recovery = if scenario.faults.is_empty() {
        Duration::ZERO
    } else {
        scenario.recovery
    };
    scenario.warmup + scenario.duration + recovery
}

/// The observer as the failover workload's [`Watch`](lockbench_failover::Watch).
struct Watched<'a>(&'a dyn Observer);

impl lockbench_failover::Watch for Watched<'_> {
    fn fault(&self, recipe: &str, event: &lockbench_core::FaultEvent) {
        self.0.fault(recipe, event);
    }

    fn warning(&self, text: &str) {
        self.0.warning(text);
    }
}
