//! Capacity planning: the highest offered rate a backend sustains within a latency objective,
//! and the evidence that the backend, not lockbench, set that limit.
//!
//! Why a crate of its own: the search is pure logic over step results and is unit-tested on
//! synthetic steps ([`knee`]); the grid of `--vary` values is data ([`grid`]); sampling CPU and
//! memory from `/proc` ([`sampler`], [`procfs`]) and judging whether the generator saturated
//! ([`saturation`]) are needed by every run, not only by sweeps; a grid point's record and the
//! sizing row it makes are bookkeeping over finished steps ([`point`]). None of it knows how a
//! step is run: the runner (`lockbench_runner::sweep_point`) runs steps with the normal
//! coordinator and feeds the figures back.
//!
//! Why this search: a closed-loop probe gives the rate N clients can drive at all; open-loop
//! steps then ramp geometrically from half of it (so the first bracket is found in a couple of
//! steps) and bisect the bracket geometrically until the highest sustained and the lowest
//! failed rate are within the resolution. Each step is judged on the achieved rate (within a
//! tolerance of the offered one: a backend that cannot keep up falls behind its schedule), on
//! the corrected p99 (from the intended start, so queueing behind a slow backend counts) and on
//! errors. A knee whose bracketing steps had lockbench saturated is reported as
//! `generator-bound`, never as the backend's capacity.
#![deny(missing_docs)]

pub mod grid;
pub mod knee;
pub mod point;
pub mod procfs;
pub mod sampler;
pub mod saturation;
pub mod timer_lag;

pub use knee::{Generator, Knee, Objective, Phase, Search, StepFigures};
pub use sampler::{Sampler, Watched};
