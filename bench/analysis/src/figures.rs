//! [`Figures`]: what a checker measured, as its own report type.
//!
//! A checker's outcome carries its figures typed, so whoever reads them (the result's safety
//! fields, the shared-lock figures, the fencing audit's tests) matches on a variant instead of
//! looking a name up and parsing JSON back. A checker added outside this crate's list brings
//! its figures as JSON ([`Figures::Json`]); they are written to `results.json` as they are.

use crate::fencing::FencingReport;
use crate::fencing_audit::AuditReport;
use crate::granted::GrantedReport;
use crate::horizon::CutOff;
use crate::lost::LostReport;
use crate::mutex::MutexReport;
use crate::release::ReleaseReport;
use crate::rwlock::RwLockReport;
use crate::truth::TruthReport;
use serde::Serialize;

/// One checker's figures. Serialized as the report itself (`null` for a checker that failed).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Figures {
    /// Whether anything was granted ([`crate::granted`]).
    Granted(GrantedReport),
    /// Overlapping holds ([`crate::mutex`]).
    Mutex(MutexReport),
    /// Stale writes the resource judged ([`crate::fencing`]).
    Fencing(FencingReport),
    /// Writes after the lock was lost ([`crate::lost`]).
    Lost(LostReport),
    /// The resource's verdicts recomputed ([`crate::fencing_audit`]).
    Audit(AuditReport),
    /// Releases and renewals of another client's lock ([`crate::release`]).
    Release(ReleaseReport),
    /// Shared locks ([`crate::rwlock`]).
    RwLock(RwLockReport),
    /// What a cut-off history left unjudged ([`crate::horizon`]).
    CutOff(CutOff),
    /// The servers' own view of who held each lock ([`crate::truth`]).
    Truth(TruthReport),
    /// A checker of its own, not one of this crate's: its figures as JSON.
    Json(serde_json::Value),
    /// The checker failed: no figures.
    None,
}

impl Figures {
    /// Any serializable figures of a checker of its own (a type that cannot serialize is a bug
    /// in the checker, which the set turns into `unknown` like any other panic).
    pub fn json(figures: &impl Serialize) -> Figures {
        Figures::Json(serde_json::to_value(figures).expect("checker figures serialize"))
    }

    /// As JSON, for `results.json`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("checker figures serialize")
    }
}

/// The report of each of this crate's checkers, found among outcomes by its variant.
macro_rules! reports {
    ($($method:ident => $variant:ident($ty:ty)),* $(,)?) => {
        /// Typed access to the figures of this crate's checkers among a run's outcomes.
        pub trait Reports {
            $(
                #[doc = concat!("The [`", stringify!($ty), "`], if that checker ran and finished.")]
                fn $method(&self) -> Option<&$ty>;
            )*
        }

        impl Reports for [crate::checker::CheckerOutcome] {
            $(
                fn $method(&self) -> Option<&$ty> {
                    self.iter().find_map(|o| match &o.figures {
                        Figures::$variant(r) => Some(r),
                        _ => None,
                    })
                }
            )*
        }
    };
}

reports! {
    granted => Granted(GrantedReport),
    mutex => Mutex(MutexReport),
    fencing => Fencing(FencingReport),
    lost => Lost(LostReport),
    audit => Audit(AuditReport),
    release => Release(ReleaseReport),
    rwlock => RwLock(RwLockReport),
    cut_off => CutOff(CutOff),
    truth => Truth(TruthReport),
}
