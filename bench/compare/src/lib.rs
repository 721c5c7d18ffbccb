//! Run-to-run comparison: `lockbench compare BASE NEW`, and a scaling curve read along the
//! worker count or the clients: `lockbench scaling RUN...` ([`scaling`]), with the
//! Universal Scalability Law fitted to it for what lies beyond the measured points ([`usl`]);
//! and the gate measuring its own false-alarm rate on runs of one build ([`noise`]).
//!
//! Nightly CI gates on this, so a verdict must mean something on a noisy 2-core machine. Why the
//! crate has this shape:
//!
//! - **Verdicts as criterion gives them.** Each shared (backend, workload, metric) is
//!   [`Verdict::Improved`], [`Verdict::Regressed`] or [`Verdict::NonSignificant`]. A change
//!   counts only when it is larger than the metric's *noise threshold* ([`Config`]; defaults
//!   measured on a 2-core machine: throughput ±15 %, acquire p50 ±20 %, p99 ±35 %) **and**,
//!   when both runs have repeated samples (`lockbench run --repeat N`, stored as
//!   `results[].repetitions`), statistically significant by Welch's t-test on the repetition
//!   means, its p-values adjusted together by Benjamini–Hochberg ([`stats`]). Nine backends of
//!   six metrics are 54 tests; at p < 0.05 each, a comparison in which nothing changed would
//!   flag about three. Adjusted, it flags anything with a chance of at most the significance
//!   level, provided the repetitions are independent samples of a steady state. With a single
//!   sample on either side the threshold alone decides.
//!   Latencies also need an absolute change above `latency_floor_us`: 40 µs → 60 µs is +50 %,
//!   and scheduling noise.
//! - **Safety is not a performance metric.** Damage (mutual-exclusion violations, stale writes
//!   accepted, writes after the lock was lost that were accepted) where the baseline had none
//!   is *always* a regression, whatever the thresholds; so is a backend that ran in the
//!   baseline and failed now, and a safety verdict that became `unknown` (a checker failed).
//! - **Nothing is dropped silently.** A backend present on only one side is listed in
//!   [`Comparison::missing`], and a metric that exists on one side only is a row with a note.
//! - **Both sides measured alike.** [`merge()`] reads several runs of one scenario as one whose
//!   repetitions are the runs, so a gate can run the baseline and the candidate in turns on one
//!   machine and compare the two merged sides.
//! - **Pure data in, data out.** [`compare`] is a function of two [`RunResults`] and a
//!   [`Config`]; [`render`] turns its [`Comparison`] into a terminal table, Markdown (for a CI
//!   comment), JSON or a self-contained HTML page. The command line only loads files and maps
//!   "any regression" to exit code 1.
#![deny(missing_docs)]

mod compare;
pub mod config;
#[cfg(test)]
mod fixtures;
pub mod merge;
pub mod noise;
pub mod power;
pub mod render;
pub mod scaling;
pub mod stats;
pub mod usl;

pub use compare::{Comparison, Injected, Missing, Row, Verdict, compare, load};
pub use config::{Config, Metric};
pub use lockbench_results::RunResults;
pub use merge::merge;
