//! Starting and reaching worker processes: worker processes the run starts itself, on this
//! machine, in a client host or in a client container (`launcher = "local"`); the launchers
//! of workers that dial in (`[workers] launcher = "dial" | "swarm"`, or external ones); and
//! removing what a dead run's launcher left.
//!
//! Why a crate of its own: launching is about processes, containers and Docker, not about
//! scenarios. The run engine (`lockbench-runner`) asks three things of it, and this crate
//! offers those and nothing else:
//! - **start N workers** of a placement: a slot's `lockbench worker` process where the run
//!   puts its workers ([`WorkerPlace`], [`WorkerCommands::start`]), removing those client hosts
//!   or containers at the end ([`WorkerPlace::remove`]); or N workers of a launcher, each
//!   dialling the coordinator with the run's secret, waited for and handed their jobs
//!   ([`start_dialled`], over [`Launched::start`]), removed at the end ([`Readmit::finish`]);
//! - **reach them**: one worker as the coordinator drives it, whoever started it
//!   ([`RunWorker`]), which process or container is which worker, so a client fault can pause
//!   or kill it ([`Launched::process`], [`Readmit::client_hosts`]), starting a killed one again
//!   ([`Respawner`]), and why a worker did not come
//!   ([`Launched::diagnose`]);
//! - **sweep leftovers**: what a `kill -9`ed Swarm run left ([`remove_swarm_leftovers`]).
//!
//! Nothing here knows a scenario, a history or a checker, and nothing here depends on the
//! runner.
//!
//! Why this shape: a launcher only *starts* workers and knows where their processes are. It
//! hands each one the coordinator's address, its name (`client<K>`, worker index K-1,
//! [`worker_name`]) and the run's secret (in the environment or a mounted secret file, never
//! on a command line), and the coordinator then waits for them at its
//! [`Listener`](lockbench_workloads::dial::Listener) like for any worker on another host: the
//! handshake, the job, the probes. What a launcher adds is what the coordinator cannot learn
//! from a TCP connection: which process or container is which worker, how to tell a user why a
//! worker did not come, and how to remove everything it started, at the end, on an error and on
//! Ctrl-C/SIGTERM (the run then ends normally and drops it; dropping a [`Launched`] cleans up
//! what [`Launched::finish`] did not).
#![deny(missing_docs)]

mod dial;
mod dialled;
mod launched;
mod leftovers;
mod local;
mod readmit;
mod respawn;
mod run_worker;
mod swarm;

pub use dialled::{DialIn, start as start_dialled};
pub use launched::{Launched, Process};
pub use leftovers::remove_swarm_leftovers;
pub use local::{WorkerCommands, WorkerPlace};
pub use readmit::Readmit;
pub use respawn::Respawner;
pub use run_worker::RunWorker;

/// The name of worker `index` (0-based): `client<index+1>`, a worker process's name and its
/// client host's, so fault targets (`client1`) mean the same worker whoever launched it.
pub fn worker_name(index: u32) -> String {
    format!("client{}", index + 1)
}
