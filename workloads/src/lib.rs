//! What the clients do, and the protected resource they do it to.
//!
//! A workload is data (a [`Workload`](lockbench_core::scenario::Workload) in the scenario) plus
//! a deterministic plan drawn from a seeded RNG ([`plan`]), executed by one generic client loop
//! per client ([`driver`]), on one single-threaded runtime per core ([`threads`]). The loop is the hot path of the whole tool, so its shape is set by
//! what it must not do: no allocation per op beyond pre-sized buffers, no formatting, no shared
//! locks, no virtual calls. Each client records into its own [`recorder::Recorder`]: ops into a
//! buffer that is shipped to the history writer in chunks (so an interrupted run keeps what it
//! recorded), latencies into its own HdrHistograms, merged when the run ends.
//!
//! The [`resource::FencedResource`] stands in for the thing a lock protects: each holder writes
//! its fencing token to it inside the critical section, and the resource says whether the token
//! was stale (a higher one was already seen) and whether it accepted the write. Clients in
//! worker processes ([`worker`]: separate OS processes, so a fault can pause a real client with
//! its heartbeats) reach the same resource as a TCP service ([`resource::ResourceService`]).
//! [`connect`] opens many clients in bounded parallel batches (1,000+ waiters for the herd
//! workload). [`schedule`] turns the scenario's `[[faults]]` into a seeded, reproducible timeline.
//! [`candidate`] runs one leader-election candidate of the failover workload in a worker
//! process, on the same machinery. Workers on other hosts dial in over TCP ([`dial`]: a per-run
//! secret, then the same protocol; [`remote`] is the coordinator's handle on one), and
//! [`clock`] measures how far each worker's clock is from the coordinator's.
#![deny(missing_docs)]

pub mod candidate;
pub mod clock;
pub mod connect;
pub mod dial;
pub mod driver;
mod hex;
pub mod link;
pub mod pacer;
pub mod plan;
pub mod recorder;
pub mod remote;
pub mod resource;
pub mod scale;
pub mod schedule;
pub mod threads;
pub mod worker;
pub mod worker_log;

pub use connect::connect_all;
pub use driver::{
    ContentionRun, Granted, HolderHooks, RunControl, SlotOptions, run_contention, run_slots,
};
pub use recorder::{RunOutput, WorkerStats};
pub use resource::{FencedResource, ResourceConn, ResourceService, WriteVerdict};
pub use worker::{Job, WorkerProcess, WorkerSinks};
