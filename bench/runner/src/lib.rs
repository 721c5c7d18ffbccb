//! The run engine: everything between a parsed scenario and its result (moved here from the
//! command line, unchanged; see the next commits for its shape).
#![deny(missing_docs)]

pub mod coordinator;
pub mod dispatch;
pub mod failover;
pub mod links;
pub mod nemesis;
pub mod placement;
pub mod resources;
pub mod respawn;
pub mod scale;
pub mod session;
pub mod sweep_step;
