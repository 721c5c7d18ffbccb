//! One step of a sweep: the scenario at one grid point and one offered rate (or closed loop),
//! run for one backend with the normal coordinator into its own run directory under `steps/`,
//! then judged against the objective.

use crate::runner::{Runner, Unit};
use lockbench_capacity::{Objective, Phase, StepFigures, saturation};
use lockbench_core::{BackendKind, Scenario};
use lockbench_report::RunDir;
use lockbench_results::capacity::SweepStep;
use lockbench_results::{BackendResult, RunResults, Status};
use std::path::Path;

/// What a step needs besides its rate.
pub struct StepContext<'a> {
    /// The scenario at this grid point, with the sweep's step length and warm-up.
    pub scenario: &'a Scenario,
    /// The sweep directory.
    pub sweep_dir: &'a Path,
    /// Runs the step.
    pub runner: &'a Runner,
    /// The objective.
    pub objective: Objective,
    /// The top-level results (for each step's own results.json header).
    pub header: &'a RunResults,
}

/// Runs step `n` of a grid point and returns its record and full result.
pub async fn run(
    ctx: &StepContext<'_>,
    kind: BackendKind,
    id: &str,
    phase: Phase,
    rate: Option<f64>,
) -> anyhow::Result<(SweepStep, BackendResult)> {
    let mut scenario = ctx.scenario.clone();
    scenario.backends = vec![kind];
    scenario.workload.rate = rate;
    // Each step locks its own keys: a key an acquire cut short at the end of the previous step
    // would stall every client that picks it here until its TTL or lease runs out.
    lockbench_registry::keys::separate(&mut scenario, id);
    scenario.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
    let rel = format!(
        "steps/{id}-{}{}",
        phase.name(),
        rate.map(|r| format!("-{r:.0}")).unwrap_or_default()
    );
    let dir = RunDir::create(
        ctx.sweep_dir,
        &scenario.name,
        Some(&ctx.sweep_dir.join(&rel)),
    )?;
    let result = ctx
        .runner
        .run_alone(Unit::Lock(kind), &scenario, &dir, ctx.header, id)
        .await?;
    Ok((record(&result, phase, rate, &rel, &ctx.objective), result))
}

fn ms(us: Option<u64>) -> Option<f64> {
    us.map(|u| u as f64 / 1e3)
}

/// The step's record: figures, verdict, resources.
fn record(
    r: &BackendResult,
    phase: Phase,
    rate: Option<f64>,
    rel: &str,
    objective: &Objective,
) -> SweepStep {
    let errors = r.errors.fail + r.errors.info;
    let p99_us = r.acquire_latency_us.as_ref().map(|p| p.p99);
    let mut reasons = match (rate, r.status) {
        (_, Status::Error) => vec![format!("error: {}", r.error.clone().unwrap_or_default())],
        (Some(offered), _) => objective.judge(&StepFigures {
            offered,
            achieved: r.throughput_per_s,
            p99_us,
            acquisitions: r.acquisitions,
            errors,
        }),
        (None, _) => Vec::new(),
    };
    if r.status == Status::Interrupted {
        reasons.push("interrupted".into());
    }
    let res = r.resources.as_ref();
    let missed = !reasons.is_empty();
    let has_servers = res.is_some_and(|u| u.servers().next().is_some());
    SweepStep {
        phase: phase.name().into(),
        offered_per_s: rate,
        achieved_per_s: r.throughput_per_s,
        acquisitions: r.acquisitions,
        p50_ms: ms(r.acquire_latency_us.as_ref().map(|p| p.p50)),
        p99_ms: ms(p99_us),
        p50_service_ms: ms(r.acquire_service_time_us.as_ref().map(|p| p.p50)),
        p99_service_ms: ms(r.acquire_service_time_us.as_ref().map(|p| p.p99)),
        errors,
        sustained: rate.is_some() && reasons.is_empty(),
        reasons,
        generator_bound: match (res, rate) {
            // A failed step: could lockbench being the limit explain the failure?
            (Some(u), Some(offered)) if missed => saturation::explains_miss(
                u,
                ms(p99_us),
                objective.p99.as_secs_f64() * 1e3,
                r.throughput_per_s >= (1.0 - objective.tolerance) * offered,
            ),
            (Some(u), _) => u.generator_bound,
            (None, _) => false,
        },
        generator_notes: res.map(|u| u.generator_notes.clone()).unwrap_or_default(),
        run_dir: rel.to_string(),
        server_cpu_percent: res.filter(|_| has_servers).map(|u| u.server_cpu_percent()),
        server_rss_mib: res.filter(|_| has_servers).map(|u| u.server_rss_mib()),
        generator_cpu_percent: res.map(|u| u.generator_cpu_percent()),
        machine_cpu_percent: res.and_then(|u| u.machine_cpu_mean()),
        requests_per_acquisition: r.server_ops_per_acquisition,
    }
}
