//! The `disk` fault: each target server's writes and syncs answered late, or held until
//! `heal`, by the slow-disk pass-through ([`lockbench_slowdisk`]) that a run with a disk fault
//! mounts over its servers' data directories.
//!
//! A stall counts only once it held one of the server's operations: the pass-through counts
//! them, and a server that made none within [`SEEN_WITHIN`] (Redis without persistence writes
//! nothing) has its stall taken back and is named as not slowed. The event's targets are the
//! servers whose disk was seen slow; the `stop` event says how many operations each had held.

use crate::seen::{self, Watch};
use crate::server_nemesis::ServerNemesis;
use crate::site::Site;
use lockbench_core::{FaultEvent, FaultKind, FaultPhase, LogSign, RunClock, Targets};
use lockbench_slowdisk::{DiskControl, Stall};
use std::time::Duration;

/// How long a slowed server has to write or sync before the stall counts as not taken.
pub(crate) const SEEN_WITHIN: Duration = Duration::from_secs(2);

/// How long after a stall ends its servers' logs are read: a server logs a slow statement or
/// sync when it ends, which the stall's end lets it do.
const LOGGED_WITHIN: Duration = Duration::from_secs(1);

/// Why a server on a pass-through still had nothing held.
const NOT_WRITTEN: &str = "made no write or sync under its data directory (a server without \
                           persistence writes nothing), so its stall was taken back";

/// Why a server without a pass-through is not slowed.
const NO_MOUNT: &str = "runs without lockbench's slow-disk pass-through (a run mounts it over \
                        the managed cluster's data directories when its schedule has a disk \
                        fault; a container's or an external server cannot have one)";

impl<S: Site> ServerNemesis<S> {
    /// Slows (`delay`) or freezes every target's disk: one `start` event naming the servers
    /// whose disk held an operation.
    pub(crate) async fn stall_disks(
        &mut self,
        t: &Targets,
        delay: Option<Duration>,
        freeze: bool,
        clock: &RunClock,
    ) -> FaultEvent {
        let names = match self.resolve(t).await {
            Ok(n) => n,
            Err(e) => {
                return FaultEvent::not_applied(clock, FaultKind::Disk, vec![], format!("{e:#}"));
            }
        };
        let (stall, how) = match (delay, freeze) {
            (_, true) => (
                Stall::Freeze,
                "writes and syncs held until heal".to_string(),
            ),
            (Some(d), false) => (
                Stall::Delay(d),
                format!("writes and syncs answered {d:?} late"),
            ),
            // `Fault::check` refuses it when the scenario is read.
            (None, false) => {
                let why = "disk: neither a delay nor a freeze".to_string();
                return FaultEvent::not_applied(clock, FaultKind::Disk, names, why);
            }
        };
        // Where the servers' logs stand before the first stall: what they write from now on
        // is read for their system's signs at heal.
        let logs_before = self.stalled.is_empty().then(|| self.log_ends());
        let began = clock.now();
        let mut waiting = Vec::new();
        // Why a target's disk could not be slowed at all.
        let mut unset = Vec::new();
        for name in &names {
            match self.site.disk(name) {
                Some(control) => {
                    let before = control.stalled_ops();
                    control.set(stall);
                    waiting.push(Watch {
                        name: name.clone(),
                        on: control,
                        before,
                    });
                }
                None => unset.push(format!("{name} {NO_MOUNT}")),
            }
        }
        let (held, unseen) =
            seen::first_effects(waiting, SEEN_WITHIN, DiskControl::stalled_ops).await;
        // The servers whose disk held an operation first, in the order they did.
        let mut parts: Vec<String> = held
            .iter()
            .map(|s| {
                format!(
                    "{}: its first held operation after {:.0?}",
                    s.watch.name, s.after
                )
            })
            .collect();
        parts.append(&mut unset);
        for w in unseen {
            w.on.set(Stall::None);
            parts.push(format!("{} {NOT_WRITTEN}", w.name));
        }
        let note = format!(
            "disk: {how}, through the slow-disk pass-through: {}",
            parts.join("; ")
        );
        if held.is_empty() {
            return FaultEvent::not_applied(clock, FaultKind::Disk, names, note);
        }
        let slowed = held.iter().map(|s| s.watch.name.clone()).collect();
        if let Some(logs) = logs_before {
            self.disk_logs = logs;
        }
        for s in held {
            self.stalled
                .insert(s.watch.name, (s.watch.on, s.watch.before));
        }
        FaultEvent::now(
            clock,
            FaultKind::Disk,
            FaultPhase::Start,
            slowed,
            note,
            true,
        )
        .at(began)
    }

    /// Puts right every disk this nemesis slowed: the `stop` event of the window, saying how
    /// many operations each held and what the servers' logs said meanwhile (read
    /// [`LOGGED_WITHIN`] after, as a server logs a slow operation once it ends), or nothing
    /// when none was slowed.
    pub(crate) async fn restore_disks(&mut self, clock: &RunClock) -> Option<FaultEvent> {
        let stalled = std::mem::take(&mut self.stalled);
        if stalled.is_empty() {
            return None;
        }
        let lifted = clock.now();
        let mut restored = Vec::new();
        let mut parts = Vec::new();
        for (name, (control, before)) in stalled {
            control.set(Stall::None);
            parts.push(format!(
                "{name} ({} operations held)",
                control.stalled_ops() - before
            ));
            restored.push(name);
        }
        tokio::time::sleep(LOGGED_WITHIN).await;
        let mut note = format!("disk answers at once again on {}", parts.join(", "));
        note.push_str(&self.logged_signs());
        Some(
            FaultEvent::now(
                clock,
                FaultKind::Disk,
                FaultPhase::Stop,
                restored,
                note,
                true,
            )
            .at(lifted),
        )
    }

    /// Every server's log file with its length now.
    fn log_ends(&self) -> Vec<(std::path::PathBuf, u64)> {
        self.servers
            .iter()
            .filter_map(|s| self.site.log_file(s.name))
            .map(|f| {
                let at = std::fs::metadata(&f).map_or(0, |m| m.len());
                (f, at)
            })
            .collect()
    }

    /// What the servers' own logs said while their disks were slow: each of their system's
    /// [`disk signs`](lockbench_core::System::disk_signs) with its count of lines, or that
    /// the logs show none.
    fn logged_signs(&mut self) -> String {
        let logs = std::mem::take(&mut self.disk_logs);
        let Some(system) = self.servers.first().map(|s| s.system) else {
            return String::new();
        };
        if logs.is_empty() || system.disk_signs().is_empty() {
            return String::new();
        }
        let mut written = String::new();
        for (file, at) in logs {
            written.push_str(&read_from(&file, at));
        }
        let seen = LogSign::count(system.disk_signs(), &written);
        if seen.is_empty() {
            return "; the servers' logs show none of its signs".into();
        }
        let seen: Vec<String> = seen
            .iter()
            .map(|(sign, n)| format!("{} x{n}", sign.what))
            .collect();
        format!("; the servers' logs meanwhile: {}", seen.join(", "))
    }
}

/// What `file` holds past byte `at` (all of it when it is shorter: a restart began a new log).
fn read_from(file: &std::path::Path, at: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(file) else {
        return String::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let _ = f.seek(SeekFrom::Start(if len < at { 0 } else { at }));
    let mut bytes = Vec::new();
    let _ = f.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}
