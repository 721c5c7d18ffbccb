//! The run engine: everything between a parsed scenario and its result.
//!
//! `lockbench run`, `--repeat`, every sweep step and the failover workload all take one path,
//! [`Runner::run_unit`] (and [`Runner::run`] over a whole scenario): the unit's stop switch is
//! armed for Ctrl-C, the [`Observer`] is told, the lock backend ([`dispatch`] picks it once,
//! then [`coordinator::execute`] runs it phase by phase: slot plan, start barrier, run window,
//! `fault_loop`, collection) or the election recipe (the failover workload,
//! `lockbench-failover`, on the run's client hosts) runs, and an error
//! becomes a result naming it. The servers are one value, [`ClusterChoice`] (managed, compose
//! or external), which also hands out the server nemesis.
//!
//! Starting and reaching worker processes (this machine's, client hosts', client containers',
//! dialled-in and Swarm workers, restarting a killed one) is `lockbench-launch`'s: the engine
//! says where and with which job, and drives the workers it gets back.
//!
//! Why a crate of its own: the command line renders and parses, nothing else; a bench, a test
//! or a future daemon runs a scenario with the same engine by implementing [`Observer`]. The
//! engine spawns worker processes as `<this binary> worker`, so a binary that runs scenarios
//! with workers must serve that subcommand with [`dispatch::run_worker`] and
//! `lockbench_failover::run_candidate` (the `lockbench` binary does).
#![deny(missing_docs)]

pub mod assemble;
mod clock_report;
pub mod cluster_choice;
pub mod coordinator;
pub mod dispatch;
mod fault_loop;
pub mod links;
pub mod observer;
pub mod placement;
pub mod resources;
pub mod respawn;
pub mod runner;
mod server_truth;
pub mod session;
mod steady;
pub mod sweep_point;
pub mod sweep_step;

pub use cluster_choice::{ClusterChoice, ServerSide};
pub use observer::{Observer, Silent, Started, UnitKind};
pub use runner::{Runner, Unit};
pub use session::Servers;
