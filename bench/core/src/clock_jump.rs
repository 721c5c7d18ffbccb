//! [`ClockJump`]: how a system's server takes the `clock-jump` fault, offered by the system
//! ([`System::clock_jump`](crate::System::clock_jump)).
//!
//! Why the system's: what a forward jump of a server's clock does is the system's to say,
//! and so is how it is made. Redis's is an emulation (every key's remaining TTL shortened by
//! the jump, by one script: libfaketime crashes Redis), which must say so in results; another
//! system might shift its clock for real. The chaos controller resolves the targets and
//! records the event; the jump itself, its words in the note, and what a server of a system
//! that cannot jump is told, are the offering system's.

use crate::server_access::{Pending, ServerAccess};
use crate::system::ServerSpec;
use std::time::Duration;

/// A system's way to jump one server's clock forward.
pub trait ClockJump: Send + Sync {
    /// Jumps `spec`'s clock forward by `by`: `Ok` says what it did for the note ("12 keys'
    /// PTTL shortened, 1 expired"), `Err` why it failed.
    fn jump<'a>(
        &'a self,
        access: &'a dyn ServerAccess,
        spec: &'static ServerSpec,
        by: Duration,
    ) -> Pending<'a, Result<String, String>>;

    /// The event's note before the servers' parts: how a jump of `by` is made (an emulation
    /// says so).
    fn how(&self, by: Duration) -> String;

    /// Why a server of another system is not jumped, for the fault's note ("the clock-jump
    /// emulation exists for Redis servers only").
    fn elsewhere(&self) -> &'static str;
}
