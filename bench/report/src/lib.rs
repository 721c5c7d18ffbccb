//! One result model, several renderings.
//!
//! The model is `lockbench-results` (the shape of `results.json`); the runner assembles it.
//! This crate renders it: [`table`] for the terminal, [`html`] for `report.html`, [`sizing`]
//! and [`failover_table`] for the sweep's and the failover workload's tables, [`truth_table`]
//! for server-side truth, [`summary_csv`], [`summary_md`] and [`junit`] for CI systems, [`site`] for a
//! publishable site of many runs; [`run_dir`] owns the
//! files a run leaves behind (`scenario.toml`, `history.jsonl.zst`, histograms, `results.json`,
//! `summary.csv`, `junit.xml`). Measurement and analysis live in other crates; this one only
//! writes and renders.
#![deny(missing_docs)]

pub mod decision;
pub mod failover_table;
pub mod html;
pub mod junit;
pub mod run_dir;
pub mod scaling_plot;
pub mod site;
pub mod sizing;
pub mod summary_csv;
pub mod summary_md;
pub mod table;
pub mod truth_table;

pub use run_dir::RunDir;
