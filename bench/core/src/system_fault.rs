//! [`SystemFault`]: a fault only one system's servers can take, offered by that system
//! ([`System::faults`](crate::System::faults)) and applied by the chaos controller through a
//! narrow [`FaultAccess`].
//!
//! Why: a fault such as `redis-failover` (cut a replica off, wait for the primary's next
//! grant, kill the primary, heal by re-attaching it as a replica) is mostly the system's
//! protocol (which Sentinel names the primary, what counts a grant, `REPLICAOF`), and a little
//! generic mechanics (a firewall rule, a SIGKILL, a restart). The protocol stays in the
//! system's crate; the mechanics stay in `lockbench-chaos`, which finds the fault by its kind
//! among the servers' system's offers, so a second system offers its own (a MariaDB failover,
//! say) from its crate, with no system named in the chaos crate.
//!
//! The contract: [`SystemFault::apply`] returns the fault's start event; an applied one opens
//! a window on its targets, which the next `heal` closes (after flushing the firewall rules)
//! by calling [`SystemFault::heal`] once per target, its note joined to the heal's.

use crate::fault::FaultEvent;
use crate::server_access::{Pending, ServerAccess};
use crate::system::{Group, ServerSpec};
use crate::time::RunClock;

/// What a [`SystemFault`] may do to the cluster: ask its servers, and the chaos controller's
/// mechanics, each recorded by it (a kill here is a server it restarts at the end of a run).
pub trait FaultAccess: Send + Sync {
    /// How it asks the servers: the same probes as every fault's (from inside their hosts,
    /// over TLS on a secure cluster).
    fn probes(&self) -> &dyn ServerAccess;

    /// Makes server `host` drop every packet from server `peer` (an iptables DROP rule inside
    /// `host`'s network namespace), until [`heal_cuts`](Self::heal_cuts). `Err` is the note
    /// of the failure, every rule already flushed when one was added.
    fn cut<'a>(&'a self, host: &'a str, peer: &'a str) -> Pending<'a, Result<(), String>>;

    /// Removes every rule [`cut`](Self::cut) (or any other fault) added.
    fn heal_cuts(&self) -> Pending<'_, ()>;

    /// SIGKILLs server `name` (its process tree, or its container) and returns once it is
    /// dead: `Ok` is the note (what was killed), `Err` names it when it was not running.
    fn kill<'a>(&'a self, name: &'a str) -> Pending<'a, Result<String, String>>;

    /// Starts server `name` again unless it runs: `Ok(Some(note))` when it was restarted,
    /// `Ok(None)` when it was running already, `Err` when the restart failed (why).
    fn restart<'a>(&'a self, name: &'a str) -> Pending<'a, Result<Option<String>, String>>;
}

/// A fault a system offers for some of its groups, found by its [`kind`](Self::kind) (the
/// fault's kind in scenarios and results, `Fault::kind`).
pub trait SystemFault: Send + Sync {
    /// Its kind (`redis-failover`).
    fn kind(&self) -> crate::FaultKind;

    /// `true` when it acts on the servers of `group`.
    fn acts_on(&self, group: Group) -> bool;

    /// Why it is not applied on any other group's servers, for the fault's note ("acts on
    /// the failover pair, not on this backend's servers").
    fn elsewhere(&self) -> &'static str;

    /// `true` when it cuts links ([`FaultAccess::cut`]), which needs every server in a host
    /// of its own (the `netns` topology, containers); refused elsewhere before it starts.
    fn cuts_links(&self) -> bool;

    /// Applies it to `servers` (one group it [`acts_on`](Self::acts_on)); the start event,
    /// stamped on `clock`, applied or not (the note says why not).
    fn apply<'a>(
        &'a self,
        access: &'a dyn FaultAccess,
        servers: &'a [&'static ServerSpec],
        clock: &'a RunClock,
    ) -> Pending<'a, FaultEvent>;

    /// Undoes what an applied window did to `target` (one of the start event's targets),
    /// once the firewall rules are gone: whether the group is whole again, and how, for the
    /// stop event's note.
    fn heal<'a>(
        &'a self,
        access: &'a dyn FaultAccess,
        servers: &'a [&'static ServerSpec],
        target: &'a str,
    ) -> Pending<'a, (bool, String)>;
}
