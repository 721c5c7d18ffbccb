//! The analysis pass run again over a run directory's history file (`lockbench analyse`).
//!
//! A run analyses each backend's history as soon as its clients stop. A run that never got
//! there (killed with SIGKILL, its writer stopped by a full disk, the machine lost) leaves a
//! history without verdicts; this runs the same pass over the file ([`Pass::run_scanned`]), which
//! judges a history without its end line only up to its horizon and says so
//! (`lockbench_analysis::horizon`). Nothing in the run directory is written or changed.
//!
//! The pass needs the measured window (hand-offs and stalls are counted inside it). The file
//! holds no run start, so the window is taken from the backend's first op plus the scenario's
//! warm-up, for its duration: the run's own start is that first op's intended start, so this
//! is the window the run used, to within the first op's scheduling.

use crate::checker::{CheckerOutcome, Validity};
use crate::pass::{Params, Pass};
use lockbench_core::{BackendKind, Nanos, Scenario};
use std::io;
use std::path::Path;

/// One backend's verdicts from the history file.
#[derive(Debug)]
pub struct Reanalysed {
    /// The backend.
    pub backend: BackendKind,
    /// Ops the pass read.
    pub ops: u64,
    /// Every checker's outcome (a cut-off history adds `horizon`, `unknown`, with its note).
    pub outcomes: Vec<CheckerOutcome>,
}

impl Reanalysed {
    /// The backend's safety verdict: invalid when any checker found a violation (proven, even
    /// before a horizon), else unknown when one could not decide, else valid. No op: unknown.
    pub fn verdict(&self) -> Validity {
        let any = |v| self.outcomes.iter().any(|o| o.validity == v);
        if any(Validity::Invalid) {
            Validity::Invalid
        } else if any(Validity::Unknown) || self.ops == 0 {
            Validity::Unknown
        } else {
            Validity::Valid
        }
    }
}

/// Runs the pass over every backend of `scenario` (the run's own, from its `scenario.toml`)
/// that has ops in `run_dir`'s history.
pub fn analyse(run_dir: &Path, scenario: &Scenario) -> io::Result<Vec<Reanalysed>> {
    let history = lockbench_core::history::file::path_in(run_dir);
    if !history.exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{} has no history file ({})",
                run_dir.display(),
                history.display()
            ),
        ));
    }
    let mut out = Vec::new();
    for &backend in &scenario.backends {
        let name = backend.name();
        // One scan finds the faults, the lateness, how far each client reached and the first
        // op (for the window); the pass reads the file a second time.
        let scan = lockbench_core::history::scan(&history, 0, Some(name))?;
        let Some(first) = scan.first else {
            out.push(Reanalysed {
                backend,
                ops: 0,
                outcomes: Vec::new(),
            });
            continue;
        };
        let measure_start = first.after(scenario.warmup);
        let params = Params {
            workload: scenario.workload.clone(),
            measure_start,
            measure_end: if scenario.duration.is_zero() {
                Nanos(u64::MAX)
            } else {
                measure_start.after(scenario.duration)
            },
            stall_alarm: scenario.stall_alarm,
        };
        let analysed = Pass::run_scanned(&params, &history, 0, Some(name), &scan)?;
        out.push(Reanalysed {
            backend,
            ops: analysed.ops,
            outcomes: analysed.outcomes,
        });
    }
    Ok(out)
}
