//! The no-grant rule: a history in which no lock was ever granted is [`Validity::Unknown`].
//!
//! With nothing held, every safety checker passes vacuously, and a backend whose servers
//! accepted connections and never answered read "safety ok" with 0 acquisitions.
//! Zero acquisitions is never "safe".

use crate::checker::{Checker, CheckerOutcome, Validity};
use crate::figures::Figures;
use lockbench_core::{Op, OpF, OpType};
use serde::{Deserialize, Serialize};

/// Why a history with no granted lock is [`Validity::Unknown`].
pub const NOTHING_GRANTED: &str = "no acquisition succeeded: nothing was checked";

/// How many locks (exclusive or shared) were granted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantedReport {
    /// Successful `acquire` and `acquire-shared` completions.
    pub grants: u64,
}

/// Counts grants; unknown when there were none.
#[derive(Default)]
pub struct GrantedChecker {
    report: GrantedReport,
}

impl Checker for GrantedChecker {
    fn name(&self) -> &'static str {
        "granted"
    }

    fn observe(&mut self, op: &Op) {
        if op.ty == OpType::Ok && matches!(op.f, OpF::Acquire | OpF::AcquireShared) {
            self.report.grants += 1;
        }
    }

    fn finish(self: Box<Self>) -> CheckerOutcome {
        let none = self.report.grants == 0;
        let validity = if none {
            Validity::Unknown
        } else {
            Validity::Valid
        };
        let mut out = CheckerOutcome::new("granted", validity, Figures::Granted(self.report));
        out.note = none.then(|| NOTHING_GRANTED.to_string());
        out
    }
}
