//! One grid point of a sweep: the offered-rate search, step by step ([`sweep_step::run`]), a
//! step that failed while lockbench was the limit run once more, stopped by an error or
//! Ctrl-C. The bookkeeping (what is kept, the row it makes) is `lockbench_capacity::point`'s;
//! each step is shown through the observer.

use crate::sweep_step::{self, StepContext};
use lockbench_capacity::Search;
use lockbench_capacity::point::{PointSearch, RETRIES_PER_POINT, Stopped, worth_again};
use lockbench_core::BackendKind;
use lockbench_core::sweep::{Rates, SweepSpec};
use lockbench_results::Status;

/// Runs the offered-rate search of grid point number `pi` (labelled `label`) for `kind`.
pub async fn search(
    ctx: &StepContext<'_>,
    spec: &SweepSpec,
    kind: BackendKind,
    pi: usize,
    label: &str,
) -> anyhow::Result<PointSearch> {
    let interrupted = || ctx.runner.interrupted();
    let mut found = PointSearch::new(match &spec.rates {
        Rates::List(l) => Search::listed(l.clone(), spec.max_steps),
        Rates::Auto(_) => Search::auto(spec.resolution, spec.max_steps),
    });
    let mut retries = RETRIES_PER_POINT;
    while let Some((phase, rate)) = found.search.next() {
        if interrupted() {
            break;
        }
        let (step, result) = loop {
            let id = format!("{}-p{pi}-{:02}", kind.name(), found.steps.len());
            let (step, result) = sweep_step::run(ctx, kind, &id, phase, rate).await?;
            let errored = result.status == Status::Error;
            let again = worth_again(rate, &step, errored, retries) && !interrupted();
            ctx.runner
                .observer()
                .sweep_step(kind.name(), label, &step, again);
            if !again {
                break (step, result);
            }
            retries -= 1;
            found.steps.push(step);
        };
        if interrupted() {
            // Cut short by Ctrl-C: kept, but it says nothing about the backend.
            found.stopped = Some(Stopped::Interrupted);
            found.steps.push(step);
            break;
        }
        if result.status == Status::Error {
            found.stopped = Some(Stopped::Error(step.reasons.join("; ")));
            found.steps.push(step);
            break;
        }
        found.record(rate, &step);
        found.knee_results.push((rate, result));
        found.steps.push(step);
    }
    Ok(found)
}
