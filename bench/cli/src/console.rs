//! How a run looks on the terminal: the engine's [`Observer`] calls rendered as a progress
//! bar per backend (its summary line when it ends), fault events as they happen (a fault
//! that could not be applied, loudly), notes and warnings as `lockbench:` lines, and after
//! each backend the alarms and notes its result carries.

use crate::progress::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lockbench_core::FaultEvent;
use lockbench_core::steady::Steady;
use lockbench_results::capacity::SweepStep;
use lockbench_results::model::SteadyWarmup;
use lockbench_results::{BackendResult, Status};
use lockbench_runner::{Observer, Started, UnitKind};
use std::sync::Mutex;

/// The console observer of `lockbench run` (and, without bars, of `lockbench sweep`).
pub struct Console {
    quiet: bool,
    /// Per-backend bars and summaries (`false` for sweep steps, which print their own line).
    bars: bool,
    /// The running backend's bar and its scenario's `stall_alarm`.
    progress: Mutex<Option<(Progress, std::time::Duration)>>,
    /// The line a backend's warm-up rounds update (`[steady]`).
    warming: Mutex<Option<ProgressBar>>,
}

impl Console {
    /// Bars and summaries for every backend (`quiet`, `-q`, hides the bar and the notes, not
    /// the summary).
    pub fn new(quiet: bool) -> Console {
        Console {
            quiet,
            bars: true,
            progress: Mutex::new(None),
            warming: Mutex::new(None),
        }
    }

    /// No bars or summaries: the caller prints one line per unit itself.
    pub fn without_bars() -> Console {
        Console {
            quiet: true,
            bars: false,
            progress: Mutex::new(None),
            warming: Mutex::new(None),
        }
    }
}

impl Observer for Console {
    fn started(&self, unit: &Started<'_>) {
        if !self.bars {
            return;
        }
        let s = unit.scenario;
        match unit.kind {
            UnitKind::Lock => {
                let bar = Progress::start(
                    unit.label,
                    unit.planned,
                    s.stall_alarm,
                    unit.control.clone(),
                    self.quiet,
                );
                *self.progress.lock().expect("progress") = Some((bar, s.stall_alarm));
            }
            UnitKind::Election => crate::say!(
                "{}: {} candidates, removals {}, {} round(s) each",
                unit.label,
                s.workload.clients,
                s.failover
                    .removals
                    .iter()
                    .map(|r| r.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                s.failover.rounds
            ),
        }
    }

    fn finished(&self, label: &str, kind: UnitKind, r: &BackendResult) {
        if !self.bars {
            return;
        }
        let error = r.error.as_deref().filter(|_| r.status == Status::Error);
        if kind == UnitKind::Election {
            if let Some(msg) = error {
                eprintln!("lockbench: {label}: error: {msg}");
            }
            return;
        }
        let Some((bar, stall_alarm)) = self.progress.lock().expect("progress").take() else {
            return;
        };
        bar.finish(match error {
            Some(msg) => format!("error: {msg}"),
            None => {
                let cpu = r
                    .resources
                    .as_ref()
                    .and_then(|u| u.cpu_per_acquisition(r.throughput_per_s))
                    .map(|c| {
                        format!(
                            ", CPU per acquisition: lockbench {:.0} µs, servers {:.0} µs",
                            c.lockbench_us, c.servers_us
                        )
                    })
                    .unwrap_or_default();
                format!(
                    "{:.0} acq/s, safety {}{cpu}",
                    r.throughput_per_s,
                    r.safety.verdict.name()
                )
            }
        });
        if let Some(u) = r.resources.as_ref().filter(|u| u.generator_bound) {
            eprintln!(
                "NOTE: {}: lockbench itself was the limit in this run, so its throughput is a lower bound: {}",
                r.backend,
                u.generator_notes.join("; ")
            );
        }
        if let Some(why) = &r.requests.unseen {
            eprintln!("WARNING: {}: {why}", r.backend);
        }
        for stall in &r.stalls {
            eprintln!(
                "ALARM: {}: no client acquired the lock for {:.1} s ({:.1} s to {:.1} s on the run clock; stall_alarm {})",
                r.backend,
                stall.ms / 1e3,
                stall.from_s,
                stall.to_s,
                humantime::format_duration(stall_alarm)
            );
        }
    }

    fn warming(&self, backend: &str, so_far: &SteadyWarmup, spec: &Steady) {
        if !self.bars || self.quiet {
            return;
        }
        let mut line = self.warming.lock().expect("warming");
        let bar = line.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(ProgressStyle::with_template("{prefix:>18} {msg}").expect("template"));
            bar.set_prefix(backend.to_string());
            bar
        });
        if let Some(r) = so_far.rounds.last() {
            bar.set_message(format!(
                "warming up until {} rounds' throughput agrees with the {} before within {:.0} % (up to {}): round {}, {:.0} acq/s, p50 {:.1} ms",
                spec.window,
                spec.window,
                spec.tolerance * 100.0,
                humantime::format_duration(spec.max),
                so_far.rounds.len(),
                r.throughput_per_s,
                r.acquire_p50_us as f64 / 1e3
            ));
        }
    }

    fn warmed(&self, backend: &str, w: &SteadyWarmup, spec: &Steady) {
        if let Some(bar) = self.warming.lock().expect("warming").take() {
            bar.finish_and_clear();
        }
        if !self.bars {
            return;
        }
        let last = w.rounds.last();
        let figures = last
            .map(|r| {
                format!(
                    ": {:.0} acq/s, p50 {:.1} ms",
                    r.throughput_per_s,
                    r.acquire_p50_us as f64 / 1e3
                )
            })
            .unwrap_or_default();
        if w.settled {
            crate::say!(
                "{backend}: steady after {:.1} s of warm-up ({} rounds){figures}",
                w.seconds,
                w.rounds.len()
            );
        } else if let Some(why) = &w.error {
            eprintln!("lockbench: warning: {backend}: warm-up stopped: {why}");
        } else {
            let recent: Vec<String> = w
                .rounds
                .iter()
                .rev()
                .take(2 * spec.window as usize)
                .rev()
                .map(|r| format!("{:.0}", r.throughput_per_s))
                .collect();
            eprintln!(
                "lockbench: warning: {backend}: NOT steady after {:.1} s of warm-up ({} rounds, the last at {} acq/s; their two halves' throughput within {:.0} % and p50 within {:.0} % is the rule): measured anyway, and its figures may still drift; raise steady.max",
                w.seconds,
                w.rounds.len(),
                recent.join(", "),
                spec.tolerance * 100.0,
                spec.p50_tolerance * 100.0
            );
        }
    }

    fn fault(&self, backend: &str, e: &FaultEvent) {
        if e.applied {
            crate::say!(
                "{backend}: {} {:?} {} ({})",
                e.fault,
                e.phase,
                e.targets.join(","),
                e.note
            );
        } else {
            eprintln!(
                "lockbench: {backend}: NOT APPLIED: {} {} ({})",
                e.fault,
                e.targets.join(","),
                e.note
            );
        }
    }

    fn note(&self, text: &str) {
        crate::say!("{text}");
    }

    fn warning(&self, text: &str) {
        eprintln!("lockbench: warning: {text}");
    }

    fn sweep_step(&self, backend: &str, point: &str, step: &SweepStep, again: bool) {
        eprintln!("{}", line(backend, point, step));
        if again {
            eprintln!("  (lockbench was the limit in that step: running it once more)");
        }
    }
}

/// One sweep step's progress line for the terminal.
fn line(backend: &str, point: &str, s: &SweepStep) -> String {
    let offered = s
        .offered_per_s
        .map(|r| format!("offered {r:>8.0}/s"))
        .unwrap_or_else(|| "closed loop     ".into());
    let verdict = match (s.offered_per_s, s.sustained) {
        (None, _) => "probe".to_string(),
        (_, true) => "sustained".into(),
        (_, false) => format!("NOT sustained: {}", s.reasons.join("; ")),
    };
    format!(
        "  {backend} {point} {:<6} {offered} -> {:>8.0}/s  p99 {:>8} ms (uncorrected {:>7} ms)  lockbench CPU {:>3.0}%{}  {verdict}",
        s.phase,
        s.achieved_per_s,
        s.p99_ms
            .map(|v| format!("{v:.1}"))
            .unwrap_or_else(|| "-".into()),
        s.p99_service_ms
            .map(|v| format!("{v:.1}"))
            .unwrap_or_else(|| "-".into()),
        s.generator_cpu_percent.unwrap_or(0.0),
        if s.generator_bound {
            " GENERATOR-BOUND"
        } else {
            ""
        },
    )
}
