//! Checkers and figures computed from a finished history.
//!
//! Everything here is a pure function of a history (plus the measured window), so it can be
//! re-run offline on a saved history and tested on hand-written histories. Checkers are values
//! implementing [`Checker`], fed the time-ordered history as a stream (see [`checker`], which
//! also says how to add one). They follow Jepsen's rule: a checker that cannot decide says
//! [`Validity::Unknown`], never "valid", and a checker that panics is `Unknown` rather than a
//! pass.
//!
//! - [`checker`]: the [`Checker`] trait, the set a run uses, the driver; [`figures`]: each
//!   checker's figures as its own report type;
//! - [`cross_check`]: the servers' own request count beside lockbench's, a figure only when
//!   the two agree;
//! - [`granted`]: no grant at all means nothing was checked (unknown);
//! - [`mutex`]: overlapping holds of one key (two clients that both believed they held it);
//! - [`rwlock`]: shared (read/write) locks: readers together, a writer never with anyone;
//! - [`fencing`]: stale writes the protected resource accepted or rejected;
//! - [`fencing_audit`]: the same staleness recomputed from the history, so a resource that
//!   misjudges shows as an instrument fault (verdict unknown) instead of a clean result;
//! - [`handoff`]: release-to-next-grant latency on contended keys;
//! - [`fairness`]: Jain's index over per-client acquisition counts;
//! - [`lost`]: writes from a holder whose lock had already been granted to someone else;
//! - [`release`]: releases that reported success after the lock had been granted to someone
//!   else (they deleted that client's lock);
//! - [`availability`]: success rate and latency before/during/after each fault window, time
//!   to the first acquisition after a fault ends, and stalls (no progress for too long);
//! - [`pass`]: one pass over the time-ordered history (in memory or streamed from disk)
//!   feeding all of the above;
//! - [`reanalysis`]: the pass again over a run directory's history file;
//! - [`horizon`]: a history cut off mid-run (no end line) is judged only up to the last time
//!   every client's ops are known to be in it, and says so;
//! - [`safety`]: all safety checkers together, with one verdict;
//! - [`verdict`]: the checkers' outcomes merged into one run's safety result, charged to
//!   the fault windows and cross-checked against the servers' count;
//! - [`attribution`]: which fault window each violation happened in (for the scorecard);
//! - [`truth`]: server-side truth: how long a client believed it held a lock the servers had
//!   given to someone else or no one (lost while held), and how long until it learned it;
//! - [`intervals`]: overlaps and lost writes judged over time intervals, for workers on their
//!   own clocks: certain only when they hold at every point, ambiguous otherwise;
//!   [`truth_intervals`]: lost-while-held episodes by the same rule; [`across_clocks`]: the
//!   point checkers' findings kept only as far as the intervals make them certain;
//! - [`failover`]: leader elections: time to a new leader and until every candidate saw it,
//!   split-brain overlap with both epochs, elections per removal.
#![deny(missing_docs)]

pub mod across_clocks;
pub mod attribution;
pub mod availability;
pub mod checker;
pub mod cross_check;
pub mod failover;
pub mod fairness;
pub mod fencing;
pub mod fencing_audit;
pub mod figures;
pub mod granted;
pub mod handoff;
pub mod horizon;
pub mod intervals;
pub mod lost;
pub mod mutex;
pub mod pass;
pub mod reanalysis;
pub mod release;
pub mod rwlock;
pub mod safety;
pub mod truth;
pub mod truth_intervals;
pub mod verdict;

pub use checker::{Checker, CheckerOutcome, CheckerSet, Finding, Validity};
pub use safety::Safety;
