//! What the systems' fault tests ask of the server nemesis's events.

use lockbench_core::{FaultEvent, FaultKind, FaultPhase};

/// The event of `kind` at `phase` among `events`, which must say it was applied (its note says
/// what was seen); panics naming the events otherwise.
pub fn applied(events: &[FaultEvent], kind: FaultKind, phase: FaultPhase) -> FaultEvent {
    let e = events
        .iter()
        .find(|e| e.fault == kind && e.phase == phase)
        .unwrap_or_else(|| panic!("no {kind} {phase:?} event in {events:#?}"));
    assert!(e.applied, "{e:#?}");
    e.clone()
}
