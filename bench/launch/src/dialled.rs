//! A run's workers that dial in (`[workers] launcher = "dial" | "swarm"`): listen
//! with a fresh secret, start them through the launcher, wait for every one, and give each its
//! job and its share of the client slots.
//!
//! Why the slots are spread (slot `s` on worker `s % count`, the fencing holder's slot 0 on
//! worker `client1`): a few workers on other hosts carry many clients, and a worker's name is
//! a worker process's (`client<K>`), so fault targets mean the same thing whoever launched it.
//! Every worker stamps its ops with its own clock, started at the job's arrival; the
//! coordinator maps them onto its own timeline ([`lockbench_workloads::clock::ClockMap`]).

use crate::readmit::Readmit;
use crate::run_worker::RunWorker;
use crate::{Launched, worker_name};
use anyhow::Context;
use lockbench_core::workers::{DEFAULT_LISTEN, Launcher, WorkersSpec};
use lockbench_workloads::clock::DRIFT_ALLOWANCE_PPM;
use lockbench_workloads::dial::{Arrival, Listener, RunSecret};
use lockbench_workloads::remote::{RemoteWorker, WorkerClock};
use lockbench_workloads::worker::{Job, WorkerSinks};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the wait for arrivals says how far it has got.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// `slots` spread over `count` workers: worker `k` runs every slot at an index `≡ k` mod
/// `count` (never more workers than slots).
fn spread(slots: &[u32], count: u32) -> Vec<Vec<u32>> {
    let count = (count as usize).min(slots.len()).max(1);
    let mut out = vec![Vec::new(); count];
    for (i, &s) in slots.iter().enumerate() {
        out[i % count].push(s);
    }
    out
}

/// What a run asks of its workers that dial in.
pub struct DialIn<'a> {
    /// The launcher and how many workers.
    pub spec: &'a WorkersSpec,
    /// The client slots the workers share.
    pub slots: &'a [u32],
    /// `true` when a worker's process must be paused (the fencing workload's holder): refused
    /// for external workers, which lockbench cannot signal.
    pub holder_paused: bool,
    /// The address the coordinator listens at (its port chosen freely), for launched workers.
    pub bind: IpAddr,
    /// `true` when the servers are on the managed cluster's bridge: Swarm tasks then get a
    /// bridge network of their own ([`Launched::start`]).
    pub bridged: bool,
    /// Where a warning for the user goes.
    pub warn: &'a dyn Fn(&str),
}

/// Starts the workers of `dial.spec` for `dial.slots`, waits for each to dial in, and hands it
/// the job `job_of(its slots)`. Returns them in worker order, and what restarts a killed one:
/// the launcher (finish it at the end), the listener, kept open, and the jobs.
pub async fn start(
    dial: DialIn<'_>,
    job_of: impl Fn(Vec<u32>) -> Job,
    sinks: &WorkerSinks,
) -> anyhow::Result<(Vec<RunWorker>, Readmit)> {
    let spec = dial.spec;
    let shares = spread(dial.slots, spec.count);
    if shares.len() < spec.count as usize {
        (dial.warn)(&format!(
            "{} worker slot(s) for {} workers: starting {}",
            dial.slots.len(),
            spec.count,
            shares.len()
        ));
    }
    let spec = WorkersSpec {
        count: shares.len() as u32,
        ..*spec
    };
    let external = spec.launcher == Launcher::External;
    if external && dial.holder_paused {
        anyhow::bail!(
            "the fencing workload pauses its holder's process, which lockbench cannot do to a \
             worker someone else started: use --workers dial:1 or swarm:1"
        );
    }
    // External workers were handed a secret already (the coordinator's own environment), and
    // come to a fixed address; the launchers' get a fresh secret and any free port.
    let (secret, at) = if external {
        let at = match spec.listen {
            Some(a) => a,
            None => DEFAULT_LISTEN.parse().expect("a socket address"),
        };
        (RunSecret::from_env().map_err(anyhow::Error::msg)?, at)
    } else {
        (RunSecret::generate(), SocketAddr::new(dial.bind, 0))
    };
    let mut listener = Listener::bind(at, secret.clone())
        .await
        .context("cannot listen for workers")?;
    if external {
        eprintln!(
            "lockbench: waiting for {} external workers (client1 ... client{}) at {}",
            spec.count,
            spec.count,
            listener.local_addr()
        );
    }
    let addr = listener.local_addr();
    let launched = Arc::new(Launched::start(&spec, addr, &secret, dial.bridged).await?);
    drop(secret);
    let arrivals = match wait_for_all(&mut listener, &launched, spec.count).await {
        Ok(a) => a,
        Err(e) => {
            let why = format!("{e:#}; {}", launched.diagnose().await);
            launched.finish().await;
            anyhow::bail!(why);
        }
    };
    let mut workers = Vec::new();
    let mut jobs = BTreeMap::new();
    for (index, arrival) in arrivals {
        let job = job_of(shares[index as usize].clone());
        jobs.insert(index, job.clone());
        let started = async {
            let mut worker = RemoteWorker::start(
                arrival,
                &job,
                sinks.clone(),
                WorkerClock::Own {
                    drift_ppm: DRIFT_ALLOWANCE_PPM,
                },
            )
            .await
            .with_context(|| format!("cannot send worker {} its job", worker_name(index)))?;
            if let Some((pid, container, via_docker)) = launched.process(index).await? {
                worker.set_process(pid, container, via_docker);
            }
            let handle = worker.handle();
            anyhow::Ok(RunWorker::Remote(Box::new(worker), handle))
        };
        match started.await {
            Ok(w) => workers.push(w),
            Err(e) => {
                drop(workers);
                launched.finish().await;
                return Err(e);
            }
        }
    }
    // The listener stays open for the run: a killed worker's successor dials in to it.
    Ok((
        workers,
        Readmit {
            launched,
            listener: tokio::sync::Mutex::new(listener),
            jobs,
            sinks: sinks.clone(),
        },
    ))
}

/// Waits until workers `client1` ... `client<count>` have all dialled in, saying how far it has
/// got every [`PROGRESS_EVERY`]. An arrival with another name, or a second one with a name
/// already taken, is turned away (its connection closes).
/// The worker index of `name` (`client<K>`: K-1) among `count` workers; `None` for a name
/// this run did not give.
pub(crate) fn index_of(name: &str, count: u32) -> Option<u32> {
    name.strip_prefix("client")
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|&n| (1..=count).contains(&n))
        .map(|n| n - 1)
}

async fn wait_for_all(
    listener: &mut Listener,
    launched: &Launched,
    count: u32,
) -> anyhow::Result<BTreeMap<u32, Arrival>> {
    let budget = launched.arrival_budget();
    let deadline = Instant::now() + budget;
    let mut arrived: BTreeMap<u32, Arrival> = BTreeMap::new();
    while arrived.len() < count as usize {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let names: Vec<String> = arrived.keys().map(|&k| worker_name(k)).collect();
            let refused = listener.refused();
            anyhow::bail!(
                "only {} of {count} workers dialled in to {} within {budget:?} (arrived: [{}]; \
                 refused: [{}])",
                arrived.len(),
                listener.local_addr(),
                names.join(", "),
                refused.join("; ")
            );
        }
        match listener.next(left.min(PROGRESS_EVERY)).await {
            Ok(a) => {
                let index = index_of(&a.name, count);
                match index {
                    Some(i) if !arrived.contains_key(&i) => {
                        arrived.insert(i, a);
                    }
                    _ => tracing::warn!(
                        worker = %a.name, peer = %a.peer,
                        "a worker this run did not start, or a second one with its name, dialled in: turned away"
                    ),
                }
            }
            Err(e) if e.contains("stopped") => anyhow::bail!(e),
            Err(_) => {
                let how = launched.progress().await.unwrap_or_default();
                eprintln!(
                    "lockbench: workers: {}/{count} dialled in{}{how}",
                    arrived.len(),
                    if how.is_empty() { "" } else { "; " }
                );
            }
        }
    }
    Ok(arrived)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_spread_round_robin_and_never_over_more_workers_than_slots() {
        assert_eq!(spread(&[0, 1, 2, 3, 4], 2), vec![vec![0, 2, 4], vec![1, 3]]);
        assert_eq!(spread(&[0], 4), vec![vec![0]]);
        assert_eq!(spread(&[0, 1, 2, 3], 4).len(), 4);
    }
}
