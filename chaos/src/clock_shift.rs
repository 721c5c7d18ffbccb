//! The `clock` fault: each target server's wall clock moved for real (a jump, a drift, or
//! both), through lockbench's clock shim ([`lockbench_cluster::clock`]), and put right at
//! `heal`.
//!
//! A shift counts only once the server has read its clock shifted: the shim counts those
//! reads in the server's clock file, and a server that makes none within [`SEEN_WITHIN`] (a
//! Go runtime such as etcd's or NATS's reads the kernel's clock without the C library; a
//! container's server runs without the shim) has its shift taken back and is named as not
//! shifted. The event's targets are the servers whose clock moved.

use crate::server_nemesis::ServerNemesis;
use crate::site::Site;
use lockbench_cluster::ClockFile;
use lockbench_core::{
    ClockDrift, ClockShift, FaultEvent, FaultKind, FaultPhase, RunClock, Targets,
};
use std::time::{Duration, Instant};

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
        let mut parts = Vec::new();
        for name in &names {
            let file = match self.site.clock_file(name).map(|p| ClockFile::open(&p)) {
                Some(Ok(f)) => f,
                Some(Err(e)) => {
                    parts.push(format!("{name}: {e:#}"));
                    continue;
                }
                None => {
                    parts.push(format!("{name} {NO_SHIM}"));
                    continue;
                }
            };
            let before = file.shifted_reads();
            file.set(
                shift.map_or(0, ClockShift::nanos),
                drift.map_or(0, ClockDrift::ppm),
            );
            shifted.push((name.clone(), file, before));
        }
        let started = Instant::now();
        let mut seen: Vec<(String, u64, Duration)> = Vec::new();
        while !shifted.is_empty() && started.elapsed() < SEEN_WITHIN {
            shifted.retain(|(name, file, before)| {
                let reads = file.shifted_reads().saturating_sub(*before);
                if reads == 0 {
                    return true;
                }
                seen.push((name.clone(), reads, started.elapsed()));
                false
            });
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for (name, file, _) in shifted {
            file.set(0, 0);
            parts.push(format!("{name} {NOT_READ}"));
        }
        let moved: Vec<String> = seen.iter().map(|(n, ..)| n.clone()).collect();
        let read = seen.iter().map(|(name, reads, after)| {
            format!("{name}: its first shifted read after {after:.0?} ({reads} by then)")
        });
        let parts: Vec<String> = read.chain(parts).collect();
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
        if moved.is_empty() {
            return FaultEvent::not_applied(clock, FaultKind::Clock, names, note);
        }
        self.shifted.extend(moved.iter().cloned());
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

    /// Puts back every clock this nemesis shifted (and any its servers' files still shift,
    /// from an interrupted run): the `stop` event of the window, or nothing when no clock was
    /// shifted.
    pub(crate) fn restore_clocks(&mut self, clock: &RunClock) -> Option<FaultEvent> {
        let mut restored = Vec::new();
        let mut failed = Vec::new();
        for spec in &self.servers {
            let Some(path) = self.site.clock_file(spec.name) else {
                continue;
            };
            match ClockFile::open(&path) {
                Ok(f) if f.is_moved() || self.shifted.contains(spec.name) => {
                    f.set(0, 0);
                    restored.push(spec.name.to_string());
                }
                Ok(_) => {}
                Err(e) => failed.push(format!("{}: {e:#}", spec.name)),
            }
        }
        self.shifted.clear();
        if restored.is_empty() && failed.is_empty() {
            return None;
        }
        let mut note = format!("wall clock restored on {}", restored.join(","));
        if !failed.is_empty() {
            note.push_str(&format!("; FAILED {}", failed.join("; ")));
        }
        Some(FaultEvent::now(
            clock,
            FaultKind::Clock,
            FaultPhase::Stop,
            restored,
            note,
            failed.is_empty(),
        ))
    }
}
