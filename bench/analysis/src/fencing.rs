//! Fencing: what the protected resource did with stale tokens.
//!
//! The resource itself decides staleness atomically when a write arrives and records it on the
//! `write` op (`stale`), and whether it accepted the write (`ok`) or rejected it (`fail`). This
//! checker counts those decisions; writes without a token (Redlock) cannot be judged and are
//! counted separately.

use lockbench_core::{History, OpF, OpType};
use serde::Serialize;

/// What the fencing checker found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FencingReport {
    /// Writes carrying a token lower than one already seen, which the resource accepted.
    pub stale_writes_accepted: u64,
    /// When each accepted stale write happened; not serialized.
    #[serde(skip)]
    pub accepted_at: Vec<lockbench_core::Nanos>,
    /// Stale writes the resource rejected (the fencing token did its job).
    pub stale_writes_rejected: u64,
    /// Writes with no token at all: the resource could not tell stale from fresh.
    pub unfenced_writes: u64,
    /// All writes.
    pub writes: u64,
}

/// Counts the `write` ops of `history`.
pub fn check(history: &History) -> FencingReport {
    let mut r = FencingReport::default();
    for op in history.ops().iter().filter(|o| o.f == OpF::Write) {
        r.writes += 1;
        match (op.stale, op.ty) {
            (None, _) => r.unfenced_writes += 1,
            (Some(true), OpType::Ok) => {
                r.stale_writes_accepted += 1;
                r.accepted_at.push(op.time);
            }
            (Some(true), _) => r.stale_writes_rejected += 1,
            (Some(false), _) => {}
        }
    }
    r
}
