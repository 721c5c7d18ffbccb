//! The kind of an applied fault, as the history records it: a closed set of names.
//!
//! Every [`FaultEvent`](crate::FaultEvent) says which fault it started or stopped. That name
//! is read back by the checkers, the scorecard and the report, so it is a type rather than a
//! string: a producer cannot misspell it, a consumer matches on it exhaustively, and the text
//! in history files and results (`"fault":"pause"`) comes from serde and [`FaultKind::name`]
//! only.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a recorded fault event did: a scenario's fault verb ([`Fault::kind`](crate::Fault)),
/// or a step of the election failover rounds (`resign`, `end`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Traffic dropped between groups of hosts.
    Partition,
    /// Every partition and link fault removed.
    Heal,
    /// Processes stopped (SIGSTOP).
    Pause,
    /// Processes continued (SIGCONT).
    Resume,
    /// Processes killed (SIGKILL).
    Kill,
    /// Killed processes restarted.
    Start,
    /// A forward clock jump (emulated on Redis).
    ClockJump,
    /// A server's wall clock shifted, for real.
    Clock,
    /// A server's disk writes and syncs slowed or held.
    Disk,
    /// Latency added on client links.
    LinkDelay,
    /// Client links black-holed.
    LinkBlackhole,
    /// A share of the packets dropped.
    PacketLoss,
    /// A Redis Sentinel failover that loses a grant.
    RedisFailover,
    /// A replica promoted after the leader was killed.
    Promote,
    /// An election candidate told to resign (failover rounds).
    Resign,
    /// The end of the election failover rounds (teardown begins).
    End,
}

impl FaultKind {
    /// Every kind, in declaration order.
    pub const ALL: [FaultKind; 16] = [
        FaultKind::Partition,
        FaultKind::Heal,
        FaultKind::Pause,
        FaultKind::Resume,
        FaultKind::Kill,
        FaultKind::Start,
        FaultKind::ClockJump,
        FaultKind::Clock,
        FaultKind::Disk,
        FaultKind::LinkDelay,
        FaultKind::LinkBlackhole,
        FaultKind::PacketLoss,
        FaultKind::RedisFailover,
        FaultKind::Promote,
        FaultKind::Resign,
        FaultKind::End,
    ];

    /// The name scenarios, history files and results use (`clock-jump`).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Partition => "partition",
            FaultKind::Heal => "heal",
            FaultKind::Pause => "pause",
            FaultKind::Resume => "resume",
            FaultKind::Kill => "kill",
            FaultKind::Start => "start",
            FaultKind::ClockJump => "clock-jump",
            FaultKind::Clock => "clock",
            FaultKind::Disk => "disk",
            FaultKind::LinkDelay => "link-delay",
            FaultKind::LinkBlackhole => "link-blackhole",
            FaultKind::PacketLoss => "packet-loss",
            FaultKind::RedisFailover => "redis-failover",
            FaultKind::Promote => "promote",
            FaultKind::Resign => "resign",
            FaultKind::End => "end",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind serializes to its name, as history files always held it, and reads back.
    #[test]
    fn every_kind_round_trips_as_its_name() {
        for kind in FaultKind::ALL {
            let text = serde_json::to_string(&kind).unwrap();
            assert_eq!(text, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<FaultKind>(&text).unwrap(), kind);
        }
    }

    /// An event line written before the kind was a type still loads.
    #[test]
    fn recorded_events_still_load() {
        let line =
            r#"{"t":1500,"fault":"pause","phase":"start","targets":["client1"],"applied":true}"#;
        let e: crate::FaultEvent = serde_json::from_str(line).unwrap();
        assert_eq!(e.fault, FaultKind::Pause);
        assert_eq!(serde_json::to_string(&e).unwrap(), line);
    }
}
