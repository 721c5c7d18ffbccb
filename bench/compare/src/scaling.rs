//! `lockbench scaling RUN...`: the same workload at several worker counts (`--workers swarm:1`,
//! `swarm:2`, `swarm:4`), one table per backend, and where the curve flattens and why.
//!
//! Why a table of its own and not `compare`: `compare` judges one run against another on noise
//! thresholds; a scaling curve is read along the worker count, and what it must say is which
//! resource ran out first: the machine's cores, a server's core, or
//! lockbench itself. Every figure is what the runs measured (`resources` in `results.json`:
//! lockbench's CPU with its worker processes and Swarm task containers, each managed server's
//! CPU, the machine's), and a figure a run could not measure (servers on another machine, a
//! run without `resources`) is shown as `n/a` and named as unknown in the verdict, never
//! guessed.

use crate::usl;
use lockbench_results::RunResults;
use lockbench_results::model::BackendResult;
use lockbench_results::resources::ResourceUsage;
use std::fmt::Write;

/// The whole machine this busy (mean over the window, percent of all cores) has run out.
pub const MACHINE_FULL_PERCENT: f64 = 90.0;
/// One server process this busy (percent of one core) has run out of its core (Redis serves
/// commands on one thread; the limit is the same for any process that cannot use a second).
pub const SERVER_FULL_PERCENT: f64 = 90.0;
/// Doubling the workers must buy at least this fraction of the ideal gain, or the curve has
/// flattened (from 1 to 2 workers: under +50 % throughput).
pub const FLAT_FRACTION: f64 = 0.5;

/// One backend's result at one worker count.
#[derive(Clone, Debug)]
pub struct Point {
    /// The run directory (or file) it came from.
    pub run: String,
    /// Workers that dialled in (distinct names in `clocks`); 0: clients in lockbench's own
    /// processes.
    pub workers: usize,
    /// Client slots.
    pub clients: usize,
    /// Acquisitions per second in the measured window.
    pub throughput: f64,
    /// Acquire latency p99, ms.
    pub p99_ms: Option<f64>,
    /// lockbench's CPU (coordinator, worker processes, task containers) per measured
    /// acquisition, µs.
    pub cpu_us_per_acq: Option<f64>,
    /// lockbench's mean CPU, percent of one core.
    pub lockbench_cpu: Option<f64>,
    /// Each managed server's mean CPU, percent of one core (empty: not measured).
    pub servers: Vec<(String, f64)>,
    /// The machine's mean CPU, percent of all cores.
    pub machine_cpu: Option<f64>,
    /// The machine's cores.
    pub cpus: usize,
    /// Why lockbench itself was the limit, when it was.
    pub generator_notes: Vec<String>,
    /// The safety verdict.
    pub verdict: String,
}

impl Point {
    fn of(run: &str, r: &BackendResult) -> Point {
        let workers = r.clocks.as_ref().map_or(0, |c| {
            let mut names: Vec<&str> = c.workers.iter().map(|w| w.name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            names.len()
        });
        let res: Option<&ResourceUsage> = r.resources.as_ref().filter(|u| u.interval_ms > 0);
        let lockbench_cpu = res.map(ResourceUsage::generator_cpu_percent);
        let cpu_us_per_acq = lockbench_cpu
            .filter(|_| r.acquisitions > 0 && r.measured_s > 0.0)
            .map(|c| c / 100.0 * r.measured_s / r.acquisitions as f64 * 1e6);
        Point {
            run: run.to_string(),
            workers,
            clients: r.clients as usize,
            throughput: r.throughput_per_s,
            p99_ms: r.acquire_latency_us.as_ref().map(|p| p.p99 as f64 / 1e3),
            cpu_us_per_acq,
            lockbench_cpu,
            servers: res.map_or_else(Vec::new, |u| {
                u.servers()
                    .map(|s| (s.name.clone(), s.cpu_percent_mean))
                    .collect()
            }),
            machine_cpu: res.and_then(ResourceUsage::machine_cpu_mean),
            cpus: res.map_or(0, |u| u.cpus),
            generator_notes: res.map_or_else(Vec::new, |u| u.generator_notes.clone()),
            verdict: format!("{:?}", r.safety.verdict).to_lowercase(),
        }
    }

    /// What ran out at this point, from what was measured; says what was not.
    pub fn limit(&self) -> String {
        let Some(machine) = self.machine_cpu else {
            return "unknown: the run has no resource samples".into();
        };
        let busiest = self
            .servers
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .cloned();
        let lockbench = self.lockbench_cpu.unwrap_or(0.0);
        let servers_sum: f64 = self.servers.iter().map(|s| s.1).sum();
        if machine >= MACHINE_FULL_PERCENT {
            let share = if self.servers.is_empty() {
                format!(
                    "lockbench {lockbench:.0}% of a core; the servers' share is not measured \
                     (not this machine's managed cluster)"
                )
            } else {
                // What the machine did beyond lockbench and the servers: other processes.
                let total = machine / 100.0 * self.cpus as f64 * 100.0;
                let other = (total - lockbench - servers_sum).max(0.0);
                format!(
                    "lockbench {lockbench:.0}% of a core, servers {servers_sum:.0}%, other \
                     processes {other:.0}%"
                )
            };
            return format!(
                "the machine's {} cores (busy {machine:.0}%: {share})",
                self.cpus
            );
        }
        if let Some((name, cpu)) = busiest.as_ref().filter(|s| s.1 >= SERVER_FULL_PERCENT) {
            return format!("server {name}'s core ({cpu:.0}% of one core)");
        }
        if !self.generator_notes.is_empty() {
            return format!("lockbench: {}", self.generator_notes.join("; "));
        }
        match busiest {
            Some((name, cpu)) => format!(
                "no CPU ran out (machine {machine:.0}%, busiest server {name} {cpu:.0}%, \
                 lockbench {lockbench:.0}%): round trips, the lock's own serialisation or disk \
                 syncs, which lockbench does not measure"
            ),
            None => format!(
                "not the machine ({machine:.0}%) nor lockbench ({lockbench:.0}%); the servers' \
                 CPU is not measured (not this machine's managed cluster)"
            ),
        }
    }
}

/// One backend's points, by worker count, and what the curve says.
#[derive(Clone, Debug)]
pub struct Curve {
    /// The backend.
    pub backend: String,
    /// Its points, fewest workers first.
    pub points: Vec<Point>,
}

impl Curve {
    /// The index of the first point where the curve flattened: the throughput rose by less
    /// than [`FLAT_FRACTION`] of the proportional gain over the point before (or fell).
    /// `None`: it kept rising, or there is one point.
    pub fn flattens_at(&self) -> Option<usize> {
        let axis = self.axis().unwrap_or(Axis::Workers);
        (1..self.points.len()).find(|&i| {
            let (a, b) = (&self.points[i - 1], &self.points[i]);
            let (wa, wb) = (axis.of(a), axis.of(b));
            if wb <= wa || a.throughput <= 0.0 {
                return false;
            }
            let ideal = wb / wa - 1.0;
            b.throughput / a.throughput - 1.0 < FLAT_FRACTION * ideal
        })
    }

    /// The sentence on where the curve flattens and which resource ran out.
    pub fn finding(&self) -> String {
        let axis = self.axis().unwrap_or(Axis::Workers);
        let at = |p: &Point| count(axis, p);
        match (self.flattens_at(), self.points.len()) {
            (_, 0 | 1) => "one point: no curve to read".into(),
            (Some(i), _) => {
                let (a, b) = (&self.points[i - 1], &self.points[i]);
                let change = (b.throughput / a.throughput - 1.0) * 100.0;
                let from = if i == 1 {
                    "from the first point".to_string()
                } else {
                    format!("after {}", at(a))
                };
                format!(
                    "flattens {from}: {} → {} changed throughput by {change:+.0}%; at {} the \
                     limit is {}; at {} it was {}",
                    axis.of(a),
                    at(b),
                    at(a),
                    a.limit(),
                    at(b),
                    b.limit()
                )
            }
            (None, _) => {
                let last = self.points.last().expect("points");
                format!(
                    "rises to {} without flattening; at {} the limit is {}",
                    at(last),
                    at(last),
                    last.limit()
                )
            }
        }
    }
}

/// What a curve's points vary in: the concurrency its model is fitted along.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Client slots (runs at several `workload.clients`).
    Clients,
    /// Worker processes or tasks, with the clients spread over them.
    Workers,
}

impl Axis {
    /// `clients`, `workers`.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Clients => "clients",
            Axis::Workers => "workers",
        }
    }

    fn of(self, p: &Point) -> f64 {
        match self {
            Axis::Clients => p.clients as f64,
            Axis::Workers => p.workers.max(1) as f64,
        }
    }
}

/// A question for the model: the throughput at this concurrency (`clients=500`, `workers=8`,
/// or a bare `500` along whatever the curve varies in).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WhatIf {
    /// The axis asked about; `None`: the curve's own.
    pub axis: Option<Axis>,
    /// The concurrency.
    pub n: f64,
}

impl std::str::FromStr for WhatIf {
    type Err = String;

    fn from_str(text: &str) -> Result<WhatIf, String> {
        let (axis, n) = match text.split_once('=') {
            Some(("clients", n)) => (Some(Axis::Clients), n),
            Some(("workers", n)) => (Some(Axis::Workers), n),
            Some((other, _)) => {
                return Err(format!(
                    "`{other}` is not a concurrency: ask `clients=N` or `workers=N`"
                ));
            }
            None => (None, text),
        };
        match n.trim().parse::<f64>() {
            Ok(n) if n >= 1.0 && n.is_finite() => Ok(WhatIf { axis, n }),
            _ => Err(format!(
                "`{text}`: the concurrency must be a number of at least 1 (`clients=500`)"
            )),
        }
    }
}

impl Curve {
    /// The concurrency the points vary in: clients when they differ, else workers when those
    /// do; `None` when neither does.
    pub fn axis(&self) -> Option<Axis> {
        let varies = |axis: Axis| {
            let first = self.points.first().map(|p| axis.of(p));
            self.points.iter().any(|p| Some(axis.of(p)) != first)
        };
        [Axis::Clients, Axis::Workers]
            .into_iter()
            .find(|&a| varies(a))
    }

    /// `(concurrency, throughput)` of every point along `axis`.
    pub fn along(&self, axis: Axis) -> Vec<(f64, f64)> {
        self.points
            .iter()
            .map(|p| (axis.of(p), p.throughput))
            .collect()
    }

    /// The Universal Scalability Law fitted along the curve's axis, or why there is none.
    pub fn model(&self) -> Result<(Axis, usl::Fit), String> {
        let axis = self
            .axis()
            .ok_or("the points do not vary in clients or workers")?;
        Ok((axis, usl::fit(&self.along(axis))?))
    }

    /// The model's paragraph: the law, its peak, its held-out error, the predictions asked for
    /// in `what_if` (those along another axis are named, not answered), and that it is a
    /// model.
    pub fn model_text(&self, what_if: &[WhatIf]) -> String {
        let (axis, f) = match self.model() {
            Ok(m) => m,
            Err(why) => return format!("no scalability model: {why}"),
        };
        let unit = axis.name();
        let se = |v: f64, e: Option<f64>, digits: usize| match e {
            Some(e) => format!("{v:.digits$} ± {e:.digits$}"),
            None => format!("{v:.digits$}"),
        };
        let mut s = format!(
            "model (Universal Scalability Law, X(N) = λN / (1 + σ(N−1) + κN(N−1)), fitted to {} \
             points at {}-{} {unit}): λ = {:.1} acq/s, σ = {} (contention), κ = {} (coherency); ",
            f.points,
            f.range.0,
            f.range.1,
            f.lambda,
            se(f.sigma, f.sigma_se, 4),
            se(f.kappa, f.kappa_se, 6)
        );
        s.push_str(&match f.peak() {
            usl::Peak::At { n, throughput } => {
                format!("peak at {n:.0} {unit}, {throughput:.0} acq/s")
            }
            usl::Peak::Ceiling(c) => format!("no peak: it levels off towards {c:.0} acq/s"),
            usl::Peak::Linear => "no peak: linear over the points".into(),
        });
        match usl::held_out(&self.along(axis)) {
            Ok(h) => s.push_str(&format!(
                "; held out {} {unit}: predicted {:.0} acq/s from the points below, measured \
                 {:.0} ({:+.1}%)",
                h.n,
                h.predicted,
                h.measured,
                h.error() * 100.0
            )),
            Err(why) => s.push_str(&format!("; no held-out check ({why})")),
        }
        for q in what_if {
            let n = q.n;
            if q.axis.is_some_and(|a| a != axis) {
                s.push_str(&format!(
                    "; what if {n} {}: not answered, the points vary in {unit}",
                    q.axis.map_or("", Axis::name)
                ));
                continue;
            }
            let beyond = if f.extrapolates(n) {
                ", extrapolated beyond the points"
            } else {
                ""
            };
            s.push_str(&format!(
                "; what if {n} {unit}: {:.0} acq/s{beyond}",
                f.predict(n)
            ));
        }
        s.push_str(
            ". A model fitted to this machine's measurements, not a measurement: it knows \
             nothing the points did not show (a resource that runs out later, another machine).",
        );
        s
    }
}

/// `1 worker`, `2 workers`, `8 clients`: a point's count along `axis`.
fn count(axis: Axis, p: &Point) -> String {
    match axis {
        Axis::Workers if p.workers == 1 => "1 worker".into(),
        Axis::Workers => format!("{} workers", p.workers),
        Axis::Clients if p.clients == 1 => "1 client".into(),
        Axis::Clients => format!("{} clients", p.clients),
    }
}

/// The curves of `runs` (label, results), one per backend found in them, points sorted by
/// worker count.
pub fn curves(runs: &[(String, RunResults)]) -> Vec<Curve> {
    let mut out: Vec<Curve> = Vec::new();
    for (label, run) in runs {
        for r in &run.results {
            if r.error.is_some() {
                continue;
            }
            let point = Point::of(label, r);
            match out.iter_mut().find(|c| c.backend == r.backend) {
                Some(c) => c.points.push(point),
                None => out.push(Curve {
                    backend: r.backend.clone(),
                    points: vec![point],
                }),
            }
        }
    }
    for c in &mut out {
        c.points.sort_by_key(|p| (p.workers, p.clients));
    }
    out
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "n/a".into(), |x| format!("{x:.digits$}"))
}

/// The curves as Markdown: a table per backend, its finding and its model (with the
/// predictions at the concurrencies in `what_if`).
pub fn markdown(curves: &[Curve], what_if: &[WhatIf]) -> String {
    let mut s = String::new();
    for c in curves {
        let _ = writeln!(s, "### {}\n", c.backend);
        let _ = writeln!(
            s,
            "| workers | clients | acq/s | p99 ms | lockbench CPU µs/acq | lockbench CPU % | \
             servers' CPU % | machine CPU % | verdict | run |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
        for p in &c.points {
            let servers = if p.servers.is_empty() {
                "n/a".to_string()
            } else {
                p.servers
                    .iter()
                    .map(|(n, c)| format!("{n} {c:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {} | {} | {} | {servers} | {} | {} | {} |",
                p.workers,
                p.clients,
                p.throughput,
                opt(p.p99_ms, 2),
                opt(p.cpu_us_per_acq, 0),
                opt(p.lockbench_cpu, 0),
                opt(p.machine_cpu, 0),
                p.verdict,
                p.run
            );
        }
        let _ = writeln!(s, "\n{}: {}\n", c.backend, c.finding());
        let _ = writeln!(s, "{}: {}\n", c.backend, c.model_text(what_if));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(workers: usize, throughput: f64, machine: f64, servers: &[(&str, f64)]) -> Point {
        Point {
            run: format!("r{workers}"),
            workers,
            clients: 4 * workers,
            throughput,
            p99_ms: Some(1.0),
            cpu_us_per_acq: Some(100.0),
            lockbench_cpu: Some(50.0),
            servers: servers.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
            machine_cpu: Some(machine),
            cpus: 2,
            generator_notes: Vec::new(),
            verdict: "valid".into(),
        }
    }

    #[test]
    fn a_flat_curve_on_a_full_machine_names_the_machine() {
        let c = Curve {
            backend: "redis-setnx".into(),
            points: vec![
                point(1, 4000.0, 99.0, &[("redis", 20.0)]),
                point(2, 4100.0, 100.0, &[("redis", 21.0)]),
            ],
        };
        assert_eq!(c.flattens_at(), Some(1));
        let f = c.finding();
        assert!(f.contains("the machine's 2 cores"), "{f}");
        // 99% of 2 cores, lockbench 50%, redis 20%: 128% was someone else's.
        assert!(f.contains("other processes 128%"), "{f}");
    }

    #[test]
    fn a_server_at_its_core_is_named_and_a_rising_curve_is_not_flat() {
        let full = point(2, 5000.0, 60.0, &[("redis", 97.0)]);
        assert!(
            full.limit().contains("server redis's core"),
            "{}",
            full.limit()
        );
        let c = Curve {
            backend: "x".into(),
            points: vec![point(1, 1000.0, 30.0, &[]), point(2, 1900.0, 50.0, &[])],
        };
        assert_eq!(c.flattens_at(), None);
        // The servers' CPU was not measured: said so, not guessed.
        assert!(c.finding().contains("not measured"), "{}", c.finding());
    }

    /// Runs at several client counts: the curve is read along the clients, the model is fitted
    /// there, checked on its highest point, and answers what-ifs (one along another axis is
    /// named, not answered).
    #[test]
    fn a_curve_along_the_clients_has_a_model_with_its_held_out_error() {
        let law = |n: f64| 900.0 * n / (1.0 + 0.04 * (n - 1.0) + 0.002 * n * (n - 1.0));
        let points = [1usize, 2, 4, 8, 16]
            .into_iter()
            .map(|n| {
                let mut p = point(0, law(n as f64), 50.0, &[]);
                p.clients = n;
                p
            })
            .collect();
        let c = Curve {
            backend: "redis-setnx".into(),
            points,
        };
        assert_eq!(c.axis(), Some(Axis::Clients));
        let asked: Vec<WhatIf> = ["clients=500", "12", "workers=4"]
            .iter()
            .map(|q| q.parse().unwrap())
            .collect();
        let text = c.model_text(&asked);
        assert!(
            text.contains("fitted to 5 points at 1-16 clients"),
            "{text}"
        );
        assert!(text.contains("peak at 22 clients"), "{text}");
        assert!(text.contains("held out 16 clients: predicted"), "{text}");
        assert!(
            text.contains("(+0.0%)") || text.contains("(-0.0%)"),
            "{text}"
        );
        let at_500 = format!("what if 500 clients: {:.0} acq/s, extrapolated", law(500.0));
        assert!(text.contains(&at_500), "{text}");
        assert!(
            text.contains(&format!("what if 12 clients: {:.0} acq/s;", law(12.0))),
            "{text}"
        );
        assert!(text.contains("what if 4 workers: not answered"), "{text}");
        assert!(text.ends_with("not a measurement: it knows nothing the points did not show (a resource that runs out later, another machine)."), "{text}");

        let flat = Curve {
            backend: "x".into(),
            points: vec![point(1, 10.0, 1.0, &[]), point(1, 11.0, 1.0, &[])],
        };
        assert!(flat.model_text(&[]).starts_with("no scalability model"));
        assert!("pods=3".parse::<WhatIf>().unwrap_err().contains("`pods`"));
        assert!("clients=0".parse::<WhatIf>().is_err());
    }

    #[test]
    fn without_samples_the_limit_is_unknown() {
        let mut p = point(1, 1.0, 0.0, &[]);
        p.machine_cpu = None;
        assert!(p.limit().starts_with("unknown"));
    }
}
