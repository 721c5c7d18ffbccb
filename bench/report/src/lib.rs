//! One result model, several renderings.
//!
//! [`model`] is the shape of `results.json` (documented in `SCHEMA.md` beside this crate, with a
//! `schema_version`), built by [`build`] from what the client loop measured and what the
//! checkers found. [`table`] renders it for the terminal; [`run_dir`] owns the files a run
//! leaves behind (`scenario.toml`, `history.jsonl.zst`, histograms, `results.json`). Measurement
//! and analysis live in other crates; this one only assembles and writes.
#![deny(missing_docs)]

pub mod build;
pub mod capacity;
pub mod environment;
pub mod failover_table;
pub mod html;
pub mod model;
pub mod resources;
pub mod run_dir;
pub mod sizing;
pub mod table;

pub use model::{BackendResult, RunResults, SCHEMA_VERSION};
pub use run_dir::RunDir;
