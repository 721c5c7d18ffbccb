//! What a run found, as data: the shape of `results.json` and nothing else.
//!
//! [`model`] is the file's layout (documented in `SCHEMA.md` beside this crate, with a
//! `schema_version`); [`status`] types what used to be compared as strings (a result's
//! [`Status`], a checker's [`Validity`]); [`resources`] is what the servers and lockbench used;
//! [`capacity`] is a sweep's knee search as recorded; [`expect`] judges a scenario's
//! expectations on the results (and so gives `lockbench run` its exit code); [`headline`] is
//! what a reader sees first: the run against its expectations, then its violations split into
//! expected and unexpected.
//!
//! Why a crate of its own: everything that reads results (`lockbench-report` renders them,
//! `lockbench-compare` judges two of them, `lockbench-capacity` fills in resource usage) needs
//! the model but none of the others' baggage: no charts, no async runtime, no client loop.
//! The runner assembles results from what it measured; this crate only says what they are.
#![deny(missing_docs)]

pub mod capacity;
pub mod clocks;
pub mod decision;
pub mod environment;
pub mod expect;
pub mod headline;
pub mod model;
pub mod resources;
pub mod scorecard;
pub mod span;
pub mod status;

pub use model::{BackendResult, RunResults, SCHEMA_VERSION};
pub use status::{Status, Validity};
