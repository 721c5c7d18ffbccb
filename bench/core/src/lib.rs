//! The vocabulary every other lockbench crate speaks, and nothing else.
//!
//! lockbench compares distributed-lock *backends* (ZooKeeper, etcd and Redis recipes) by running
//! the same *workload* against each and checking the recorded *history*. Those three things meet
//! here, in plain types and two small traits, so that a backend crate, the workload driver and
//! the checkers can be written, tested and read without knowing about one another:
//!
//! - [`ids`]: small `Copy` identifiers ([`ClientId`], [`KeyId`], [`FencingToken`]) so the client
//!   loop never handles strings;
//! - [`op`]: one history event ([`Op`]) and the definite/indeterminate [`Outcome`] of a call,
//!   as Jepsen models them (`ok`, `fail`, `info`);
//! - [`history`]: the merged, time-ordered list of ops, and its JSON-lines form;
//! - [`time`]: the one monotonic clock every op is stamped with;
//! - [`scenario`]: the TOML scenario a run is made from, with its defaults and validation;
//!   [`steady`]: the warm-up rounds that bring a backend to steady state before it is measured;
//! - [`endpoints`]: where each backend's servers listen (managed or external cluster), and
//!   [`connection`]: how clients connect to them (TLS, credentials named by their source);
//! - [`fault`]: fault verbs on named targets, and the fault events a history records;
//! - [`finding`]: [`FindingKind`], the one list of what a safety checker can report;
//! - [`traits`]: [`Backend`] (makes clients for one recipe) and [`LockClient`]
//!   (`acquire` / `release` / `renew`); [`recipe`]: one recipe as its system registers it
//!   ([`Recipe`]), built as an [`AnyBackend`] ([`erased`]: any backend behind one type, so
//!   the set of recipes is open);
//! - [`counters`]: the servers' own request counters ([`ServerCounters`]) and when two
//!   readings' difference is no count (a server whose counters restarted in between);
//! - [`server_view`]: who the servers say holds a lock ([`ServerObservation`]), recorded by a
//!   server-side observer beside the clients' ops;
//! - [`system`]: the [`System`] trait each server system's crate implements (its servers,
//!   ports, groups and rules, its launch and its probes as data), and the [`ServerSpec`] /
//!   [`Group`] of the managed cluster; [`launch`]: how a server starts ([`launch::Launch`]),
//!   the same in managed mode and in a container; what a system offers to the chaos
//!   controller: [`SystemFault`] (a fault only its servers take, applied through a
//!   [`FaultAccess`]), [`ClockJump`], both reaching the servers through a [`ServerAccess`];
//! - [`election`]: leader election for the `failover` workload: [`ElectionKind`], the
//!   [`Elector`] / [`Candidate`] roles and the `[failover]` knobs; an election recipe is
//!   registered as an [`ElectionRecipe`] and built as an [`AnyElector`] ([`erased_election`]:
//!   any elector behind one type, so the set of election recipes is open too).
//!
//! No runtime, no network clients and no rendering live here: those pull in heavy dependencies
//! and change for their own reasons.
#![deny(missing_docs)]

pub mod clock_jump;
pub mod clock_shift;
pub mod connection;
pub mod counters;
pub mod crypto;
pub mod election;
pub mod endpoints;
pub mod erased;
pub mod erased_election;
pub mod expect;
pub mod fanout;
pub mod fault;
pub mod fault_cell;
pub mod fault_kind;
pub mod finding;
pub mod history;
pub mod ids;
pub mod knobs;
pub mod launch;
pub mod log_sign;
pub mod op;
pub mod recipe;
pub mod scenario;
pub mod seed;
pub mod server_access;
pub mod server_view;
pub mod signal;
pub mod slowdown;
pub mod steady;
pub mod sweep;
pub mod system;
pub mod system_fault;
pub mod time;
pub mod tls_failure;
pub mod traits;
pub mod workers;

pub use clock_jump::ClockJump;
pub use clock_shift::{ClockDrift, ClockShift};
pub use connection::{Connection, ConnectionSummary, Tls};
pub use counters::{Incarnation, ServerCount};
pub use election::{Candidate, ElectionInfo, Elector, Leader, Removal};
pub use endpoints::{Endpoints, SENTINEL_MASTER_NAME};
pub use erased::{AnyBackend, AnyClient, AnyHandle};
pub use erased_election::{AnyCandidate, AnyElector};
pub use fanout::{ServerFanout, WakeupTally, Wakeups};
pub use fault::{
    Cut, CutDirection, Fault, FaultEvent, FaultPhase, LossMode, PartitionSpec, Route, Targets,
};
pub use fault_cell::{FaultCell, fault_label};
pub use fault_kind::FaultKind;
pub use finding::FindingKind;
pub use history::History;
pub use ids::{BackendKind, ClientId, ElectionKind, FencingToken, KeyId};
pub use log_sign::LogSign;
pub use op::{ErrorKind, Op, OpF, OpType, Outcome};
pub use recipe::{ElectionRecipe, Recipe};
pub use scenario::Scenario;
pub use seed::{Seed, Stream};
pub use server_access::{Login, Pending, ServerAccess};
pub use server_view::{HolderRecorder, ServerObservation, ServerSink};
pub use system::{Announced, Exchange, Group, Leadership, Probe, ServerSpec, System};
pub use system_fault::{FaultAccess, SystemFault};
pub use time::{Nanos, RunClock};
pub use traits::{Backend, BackendInfo, Grant, LockClient, ServerCounters};
