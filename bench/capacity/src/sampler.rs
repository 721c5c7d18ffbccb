//! Samples CPU and resident memory of lockbench (with every worker process it started, and the
//! processes of the Swarm task containers it started, but never the servers it started) and of
//! the backend's servers (each with the processes it forked: PostgreSQL serves every connection
//! in one) while a backend runs, plus how late lockbench's timers fire, and
//! summarises them over the measured window as a [`ResourceUsage`].
//!
//! It runs as two tasks: one reads `/proc` every interval (a few small files per process:
//! negligible next to the clients), on the caller's runtime; one sleeps 5 ms at a time and
//! records how late each wake-up was, in memory that does not grow with the run
//! ([`crate::timer_lag`]), on the runtime the caller names: the client loops' (their pacer
//! sleeps on the same timers, so this is the pacer's lag).

use crate::procfs;
use crate::saturation;
use crate::timer_lag::LagRecord;
use hdrhistogram::Histogram;
use lockbench_core::{Nanos, RunClock};
use lockbench_results::resources::{ProcessUsage, ResourceUsage};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A server process to sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watched {
    /// Its name (`zk1`, `redis`).
    pub name: String,
    /// Its pid.
    pub pid: u32,
}

/// The timer-lag probe's sleep.
const LAG_PROBE: Duration = Duration::from_millis(5);

/// The sampling interval for a run whose measured window is `measured` long: one second (as
/// `top` shows it), shorter for short runs so that the window holds at least ~8 samples, but
/// never below 100 ms.
pub fn interval_for(measured: Duration) -> Duration {
    (measured / 8).clamp(Duration::from_millis(100), Duration::from_secs(1))
}

/// A running sampler; [`Sampler::finish`] stops it and summarises.
pub struct Sampler {
    stop: watch::Sender<bool>,
    /// The measured window's start, once known (the lag probe folds older samples after it).
    from: watch::Sender<Option<Nanos>>,
    proc_task: JoinHandle<Samples>,
    lag_task: JoinHandle<LagRecord>,
    interval: Duration,
    clock: RunClock,
    /// Processes outside lockbench's tree that are lockbench's too ([`Sampler::also_ours`]).
    extra: Extra,
}

/// Roots of process trees counted as lockbench's beside its own (the Swarm task containers'
/// workers), with the ticks they had when added, so that only what they use from then on is
/// counted.
type Extra = std::sync::Arc<std::sync::Mutex<(Vec<u32>, BTreeMap<u32, u64>)>>;

#[derive(Default)]
struct Series {
    pids: Vec<u32>,
    cpu: Vec<f64>,
    rss: Vec<f64>,
}

#[derive(Default)]
struct Samples {
    times: Vec<Nanos>,
    machine: Vec<f64>,
    generator: Series,
    servers: Vec<(String, Series)>,
    /// Per sample, each lockbench thread's cumulative ticks.
    threads: Vec<BTreeMap<u32, u64>>,
}

impl Sampler {
    /// Starts sampling lockbench (this process and its descendants) and `servers` every
    /// `interval`, with times on `clock`.
    /// The lag probe runs on the caller's runtime.
    pub fn start(servers: Vec<Watched>, interval: Duration, clock: RunClock) -> Sampler {
        let here = tokio::runtime::Handle::current();
        Sampler::start_excluding(servers, Vec::new(), interval, clock, &here)
    }

    /// As [`Sampler::start`], but lockbench's share leaves out the processes in `not_ours`
    /// and everything below them, as it does the watched `servers`. When a run starts the
    /// managed cluster itself, every server is lockbench's descendant; counted as lockbench,
    /// they made it look saturated ("lockbench CPU 165-182%", generator-bound) while it used
    /// about 11% of a core. lockbench's share is itself and its worker processes only.
    ///
    /// The timer-lag probe runs on `lag_on`, the runtime whose timers the clients wait on.
    pub fn start_excluding(
        servers: Vec<Watched>,
        not_ours: Vec<u32>,
        interval: Duration,
        clock: RunClock,
        lag_on: &tokio::runtime::Handle,
    ) -> Sampler {
        let (stop, rx) = watch::channel(false);
        let mut prune = not_ours;
        prune.extend(servers.iter().map(|w| w.pid));
        let extra = Extra::default();
        let proc_task = tokio::spawn(sample(
            servers,
            prune,
            interval,
            clock,
            rx.clone(),
            extra.clone(),
        ));
        let (from, from_rx) = watch::channel(None);
        let lag_task = lag_on.spawn(probe_lag(clock, rx, from_rx));
        Sampler {
            stop,
            from,
            proc_task,
            lag_task,
            interval,
            clock,
            extra,
        }
    }

    /// Counts the processes `roots` and their descendants as lockbench's from now on: workers
    /// lockbench started that are not its descendants (a Swarm task's container's processes,
    /// children of the container runtime). Each is counted from its ticks now, not from its
    /// start.
    pub fn also_ours(&self, roots: &[u32]) {
        let mut extra = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        for &root in roots {
            for pid in procfs::tree(root) {
                if let Some(t) = procfs::cpu_ticks(pid) {
                    extra.1.insert(pid, t);
                }
            }
            extra.0.push(root);
        }
    }

    /// Says where the measured window starts, so that the lag probe can fold its older samples
    /// into a histogram instead of keeping them all (see [`crate::timer_lag`]). Call it as
    /// soon as the window is known, and [`Sampler::finish`] soon after it ends.
    pub fn measure_from(&self, from: Nanos) {
        self.from.send_replace(Some(from));
    }

    /// Stops sampling and summarises over the measured window `[from, to]` on the run clock.
    pub async fn finish(mut self, from: Nanos, to: Nanos) -> ResourceUsage {
        self.stop.send_replace(true);
        let samples = (&mut self.proc_task).await.unwrap_or_default();
        let lags = match (&mut self.lag_task).await {
            Ok(record) => record.window(from, to),
            Err(_) => LagRecord::new().window(from, to),
        };
        summarise(samples, &lags, self.interval, from, to)
    }

    /// The run clock the samples are timed on.
    pub fn clock(&self) -> RunClock {
        self.clock
    }
}

/// A sampler dropped without [`Sampler::finish`] (a run that failed half-way) stops its tasks.
impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

async fn sample(
    servers: Vec<Watched>,
    prune: Vec<u32>,
    interval: Duration,
    clock: RunClock,
    mut stop: watch::Receiver<bool>,
    extra: Extra,
) -> Samples {
    let me = std::process::id();
    let mut out = Samples {
        servers: servers
            .iter()
            .map(|w| {
                (
                    w.name.clone(),
                    Series {
                        pids: vec![w.pid],
                        ..Series::default()
                    },
                )
            })
            .collect(),
        ..Samples::default()
    };
    out.generator.pids.push(me);
    let mut last_at = Instant::now();
    let mut last_machine = procfs::machine_ticks();
    let mut last_gen: BTreeMap<u32, u64> = procfs::tree_pruned(me, &prune)
        .into_iter()
        .filter_map(|p| procfs::cpu_ticks(p).map(|t| (p, t)))
        .collect();
    let family = procfs::parents();
    let mut last_server: Vec<BTreeMap<u32, u64>> =
        servers.iter().map(|w| tree_ticks(&family, w.pid)).collect();
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        let now = Instant::now();
        let dt = now.duration_since(last_at).as_secs_f64().max(1e-3);
        last_at = now;
        let percent = |ticks: u64| ticks as f64 / procfs::ticks_per_s() / dt * 100.0;
        out.times.push(clock.now());

        let machine = procfs::machine_ticks();
        out.machine.push(match (last_machine, machine) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
                (b1 - b0) as f64 / (t1 - t0) as f64 * 100.0
            }
            _ => 0.0,
        });
        last_machine = machine;

        // lockbench and its workers: a process first seen now counts from zero.
        let mut gen_ticks = 0;
        let mut gen_rss = 0;
        let mut seen = BTreeMap::new();
        let family = procfs::parents();
        let mut ours = procfs::below(&family, me, &prune);
        {
            let mut extra = extra.lock().unwrap_or_else(|e| e.into_inner());
            // Added since the last sample: counted from their ticks when added.
            last_gen.append(&mut extra.1);
            for &root in &extra.0 {
                ours.extend(procfs::tree(root));
            }
        }
        ours.sort_unstable();
        ours.dedup();
        for pid in ours {
            if let Some(t) = procfs::cpu_ticks(pid) {
                gen_ticks += t.saturating_sub(last_gen.get(&pid).copied().unwrap_or(0));
                gen_rss += procfs::rss_kib(pid).unwrap_or(0);
                seen.insert(pid, t);
                if !out.generator.pids.contains(&pid) {
                    out.generator.pids.push(pid);
                }
            }
        }
        last_gen = seen;
        out.generator.cpu.push(percent(gen_ticks));
        out.generator.rss.push(gen_rss as f64 / 1024.0);
        out.threads.push(procfs::thread_ticks(me));

        for ((w, (_, series)), last) in servers
            .iter()
            .zip(out.servers.iter_mut())
            .zip(last_server.iter_mut())
        {
            // The server and the processes it forked (PostgreSQL serves each connection
            // in a process of its own); a process first seen now counts from zero.
            let now = tree_ticks(&family, w.pid);
            let used: u64 = now
                .iter()
                .map(|(pid, t)| t.saturating_sub(last.get(pid).copied().unwrap_or(0)))
                .sum();
            series
                .cpu
                .push(if now.is_empty() { 0.0 } else { percent(used) });
            // Resident memory of the server's own process: its children share its pages
            // (PostgreSQL's shared buffers), so adding theirs would count them again.
            series
                .rss
                .push(procfs::rss_kib(w.pid).unwrap_or(0) as f64 / 1024.0);
            *last = now;
        }
    }
    out
}

/// CPU ticks of `pid` and of every process below it in `family` ([`procfs::parents`]), by pid.
fn tree_ticks(family: &[(u32, u32)], pid: u32) -> BTreeMap<u32, u64> {
    procfs::below(family, pid, &[])
        .into_iter()
        .filter_map(|p| procfs::cpu_ticks(p).map(|t| (p, t)))
        .collect()
}

async fn probe_lag(
    clock: RunClock,
    mut stop: watch::Receiver<bool>,
    from: watch::Receiver<Option<Nanos>>,
) -> LagRecord {
    let mut lags = LagRecord::new();
    loop {
        let asked = Instant::now();
        tokio::select! {
            _ = tokio::time::sleep(LAG_PROBE) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        let late = asked.elapsed().saturating_sub(LAG_PROBE);
        if let Some(from) = *from.borrow() {
            lags.measure_from(from);
        }
        lags.push(clock.now(), late.as_micros() as u64);
    }
    lags
}

fn summarise(
    s: Samples,
    lags: &Histogram<u64>,
    interval: Duration,
    from: Nanos,
    to: Nanos,
) -> ResourceUsage {
    // A sample covers the interval before it: take those ending inside the window (and the
    // one ending just after it, which is mostly inside).
    let end = to.after(interval / 2);
    let inside: Vec<usize> = (0..s.times.len())
        .filter(|&i| s.times[i] > from && s.times[i] <= end)
        .collect();
    let mean_max = |v: &[f64]| {
        let xs: Vec<f64> = inside.iter().filter_map(|&i| v.get(i).copied()).collect();
        if xs.is_empty() {
            (0.0, 0.0)
        } else {
            (
                xs.iter().sum::<f64>() / xs.len() as f64,
                xs.iter().copied().fold(0.0, f64::max),
            )
        }
    };
    let usage = |name: &str, role: &str, series: &Series| {
        let (mean, max) = mean_max(&series.cpu);
        ProcessUsage {
            name: name.into(),
            role: role.into(),
            pids: series.pids.clone(),
            cpu_percent: series.cpu.iter().map(|x| round1(*x)).collect(),
            rss_mib: series.rss.iter().map(|x| round1(*x)).collect(),
            cpu_percent_mean: round1(mean),
            cpu_percent_max: round1(max),
            rss_mib_max: round1(series.rss.iter().copied().fold(0.0, f64::max)),
            busiest_thread_cpu_percent: None,
        }
    };
    let mut generator = usage("lockbench", "generator", &s.generator);
    generator.busiest_thread_cpu_percent = busiest_thread(&s, &inside);
    let mut processes = vec![generator];
    for (name, series) in &s.servers {
        processes.push(usage(name, "server", series));
    }
    let machine: Vec<f64> = inside.iter().map(|&i| round1(s.machine[i])).collect();
    let pick = |q: f64| (!lags.is_empty()).then(|| round1(lags.value_at_quantile(q) as f64 / 1e3));
    let mut u = ResourceUsage {
        interval_ms: interval.as_millis() as u64,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        sample_times_s: s.times.iter().map(|t| round3(t.0 as f64 / 1e9)).collect(),
        machine_cpu_percent: machine,
        processes,
        timer_lag_p99_ms: pick(0.99),
        timer_lag_max_ms: pick(1.0),
        generator_bound: false,
        generator_notes: Vec::new(),
    };
    u.generator_notes = saturation::reasons(&u);
    u.generator_bound = !u.generator_notes.is_empty();
    u
}

/// The busiest lockbench thread's mean CPU over the samples `inside` the window.
fn busiest_thread(s: &Samples, inside: &[usize]) -> Option<f64> {
    let (&first, &last) = (inside.first()?, inside.last()?);
    // From the sample before the window's first (its start) to the last one.
    let start = first.checked_sub(1)?;
    let secs = (s.times[last].0.saturating_sub(s.times[start].0)) as f64 / 1e9;
    if secs <= 0.0 {
        return None;
    }
    let (a, b) = (&s.threads[start], &s.threads[last]);
    b.iter()
        .map(|(tid, &t)| t.saturating_sub(a.get(tid).copied().unwrap_or(t)))
        .max()
        .map(|ticks| round1(ticks as f64 / procfs::ticks_per_s() / secs * 100.0))
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sees_a_busy_thread_and_a_child_process() {
        let clock = RunClock::start();
        // A child that burns CPU, as a worker process would.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh");
        let sampler = Sampler::start(Vec::new(), Duration::from_millis(100), clock);
        let from = clock.now();
        tokio::time::sleep(Duration::from_millis(900)).await;
        let to = clock.now();
        let u = sampler.finish(from, to).await;
        let _ = child.kill();
        let _ = child.wait();
        let generator = &u.processes[0];
        assert!(generator.pids.contains(&child.id()), "{:?}", generator.pids);
        // Generous: the machine is shared (a loaded 2-core CI machine gave the child under a
        // fifth of a core); an uncounted child would read ~0 %.
        assert!(generator.cpu_percent_mean > 5.0, "{generator:?}");
        assert!(generator.rss_mib_max > 1.0);
        assert!(u.timer_lag_p99_ms.is_some());
        assert!(u.sample_times_s.len() >= 5);
    }

    /// Regression: a server lockbench started is its child, and was counted as lockbench
    /// (generator-bound at 165-182% while lockbench itself used ~11% of a core). The same busy
    /// child, watched as a server (and another one known not to be lockbench's), counts for
    /// the server only.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_lockbench_started_is_not_counted_as_lockbench() {
        let clock = RunClock::start();
        let busy = || {
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("sh")
        };
        let (mut server, mut other) = (busy(), busy());
        let watched = Watched {
            name: "redis".into(),
            pid: server.id(),
        };
        let sampler = Sampler::start_excluding(
            vec![watched],
            vec![other.id()],
            Duration::from_millis(100),
            clock,
            &tokio::runtime::Handle::current(),
        );
        let from = clock.now();
        tokio::time::sleep(Duration::from_millis(900)).await;
        let to = clock.now();
        let u = sampler.finish(from, to).await;
        for child in [&mut server, &mut other] {
            let _ = child.kill();
            let _ = child.wait();
        }
        let generator = &u.processes[0];
        assert_eq!(generator.role, "generator");
        assert_eq!(generator.pids, vec![std::process::id()], "{generator:?}");
        let s = u.servers().next().expect("the watched server");
        assert_eq!(s.pids, vec![server.id()]);
        // The busy server is read (its share is whatever a loaded machine leaves it, so only
        // that it is some); how it compares with lockbench's own is no property of the split.
        assert!(s.cpu_percent_mean > 0.0, "server {s:?}");
    }

    /// A server that works in processes it forked (PostgreSQL serves each connection in one;
    /// its postmaster only waits) is charged their CPU: it read 0 % before.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_is_charged_the_cpu_of_the_processes_it_forked() {
        let clock = RunClock::start();
        let mut server = std::process::Command::new("sh")
            .args(["-c", "sh -c 'while :; do :; done' & wait"])
            .spawn()
            .expect("sh");
        let watched = Watched {
            name: "postgres".into(),
            pid: server.id(),
        };
        let sampler = Sampler::start(vec![watched], Duration::from_millis(100), clock);
        let from = clock.now();
        tokio::time::sleep(Duration::from_millis(900)).await;
        let to = clock.now();
        let u = sampler.finish(from, to).await;
        for pid in procfs::tree(server.id()).into_iter().rev() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = server.wait();
        let s = u.servers().next().expect("the watched server");
        // Generous, as above: an uncharged child would read ~0 %.
        assert!(s.cpu_percent_mean > 5.0, "{s:?}");
        // Nor is the child lockbench's: only this process was sampled as lockbench. (Not a
        // comparison of the two CPU figures: on a loaded machine the busy child gets as little
        // of a core as the sampler itself spends.)
        let generator = &u.processes[0];
        assert_eq!(generator.pids, vec![std::process::id()], "{generator:?}");
    }
}
