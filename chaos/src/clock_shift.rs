//! The `clock` fault: each target server's wall clock moved for real (a jump, a drift, or
//! both), through lockbench's clock shim ([`lockbench_cluster::clock`]), and put right at
//! `heal`.
//!
//! A shift counts only once the server has read its clock shifted: the shim counts those
//! reads in the server's clock file, and a server that makes none within [`SEEN_WITHIN`] (a
//! Go runtime such as etcd's or NATS's reads the kernel's clock without the C library; a
//! container's server runs without the shim) has its shift taken back and is named as not
//! shifted. The event's targets are the servers whose clock moved.

use crate::seen::{self, Watch};
use crate::server_nemesis::ServerNemesis;
use crate::site::Site;
use lockbench_cluster::ClockFile;
use lockbench_core::{
    ClockDrift, ClockShift, FaultEvent, FaultKind, FaultPhase, RunClock, Targets,
};
use std::time::Duration;

/// How long a shifted server has to read its clock before the shift counts as not taken.
pub(crate) const SEEN_WITHIN: Duration = Duration::from_secs(1);

/// Why a server with a clock file still made no shifted read.
const NOT_READ: &str = "made no clock read through the C library (a Go runtime reads the \
                        kernel's clock itself), so its shift was taken back";

/// Why a server without a clock file is not shifted.
const NO_SHIM: &str = "runs without lockbench's clock shim (the managed cluster's servers \
                       are started with it; a server started before lockbench had it needs \
                       `lockbench down` and `lockbench up`)";

impl<S: Site> ServerNemesis<S> {
    /// Moves every target's wall clock by `shift` and makes it drift by `drift`: one `start`
    /// event naming the servers whose clock moved.
    pub(crate) async fn shift_clocks(
        &mut self,
        t: &Targets,
        shift: Option<ClockShift>,
        drift: Option<ClockDrift>,
        clock: &RunClock,
    ) -> FaultEvent {
        let names = match self.resolve(t).await {
            Ok(n) => n,
            Err(e) => {
                return FaultEvent::not_applied(clock, FaultKind::Clock, vec![], format!("{e:#}"));
            }
        };
        let began = clock.now();
        let mut shifted = Vec::new();
        // Why a target's clock could not be set at all.
        let mut unset = Vec::new();
        for name in &names {
            let file = match self.site.clock_file(name).map(|p| ClockFile::open(&p)) {
                Some(Ok(f)) => f,
                Some(Err(e)) => {
                    unset.push(format!("{name}: {e:#}"));
                    continue;
                }
                None => {
                    unset.push(format!("{name} {NO_SHIM}"));
                    continue;
                }
            };
            let before = file.shifted_reads();
            file.set(
                shift.map_or(0, ClockShift::nanos),
                drift.map_or(0, ClockDrift::ppm),
            );
            shifted.push(Watch {
                name: name.clone(),
                on: file,
                before,
            });
        }
        let (read, unseen) =
            seen::first_effects(shifted, SEEN_WITHIN, ClockFile::shifted_reads).await;
        // The servers that read their shifted clock first, in the order they did.
        let mut parts: Vec<String> = read
            .iter()
            .map(|s| {
                format!(
                    "{}: its first shifted read after {:.0?} ({} by then)",
                    s.watch.name,
                    s.after,
                    s.count - s.watch.before
                )
            })
            .collect();
        parts.append(&mut unset);
        for w in unseen {
            w.on.set(0, 0);
            parts.push(format!("{} {NOT_READ}", w.name));
        }
        let how = match (shift, drift) {
            (Some(s), Some(d)) => format!("{s}, then drifting {d},"),
            (Some(s), None) => s.to_string(),
            (None, Some(d)) => format!("drifting {d}"),
            (None, None) => "unmoved".into(),
        };
        let note = format!(
            "wall clock {how} through the clock shim: {}",
            parts.join("; ")
        );
        if read.is_empty() {
            return FaultEvent::not_applied(clock, FaultKind::Clock, names, note);
        }
        let moved = read.iter().map(|s| s.watch.name.clone()).collect();
        self.shifted
            .extend(read.into_iter().map(|s| (s.watch.name, s.watch.on)));
        FaultEvent::now(
            clock,
            FaultKind::Clock,
            FaultPhase::Start,
            moved,
            note,
            true,
        )
        .at(began)
    }

    /// Puts right every clock this nemesis moved: the `stop` event of the window, or nothing
    /// when none was moved. (A clock a crashed run left moved is [`crate::cleanup`]'s.)
    pub(crate) fn restore_clocks(&mut self, clock: &RunClock) -> Option<FaultEvent> {
        let shifted = std::mem::take(&mut self.shifted);
        if shifted.is_empty() {
            return None;
        }
        let mut restored = Vec::new();
        for (name, file) in shifted {
            file.set(0, 0);
            restored.push(name);
        }
        let note = format!("wall clock restored on {}", restored.join(","));
        Some(FaultEvent::now(
            clock,
            FaultKind::Clock,
            FaultPhase::Stop,
            restored,
            note,
            true,
        ))
    }
}
