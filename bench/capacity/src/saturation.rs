//! Was the load generator the limit? A result whose clients ran out of CPU, or whose pacer
//! woke up late, measures lockbench, not the backend; this says so, with the figures.

use lockbench_results::resources::ResourceUsage;

/// lockbench (with its workers) using this fraction of all CPUs saturates the machine.
pub const MACHINE_FRACTION: f64 = 0.9;
/// One lockbench thread at this percent of a core is a single-thread bottleneck.
pub const THREAD_PERCENT: f64 = 90.0;
/// Timers firing this late (p99, ms) mean the open-loop pacer cannot keep its schedule.
pub const LAG_MS: f64 = 10.0;
/// The whole machine this busy (percent) with lockbench holding at least half of it and more
/// than the servers.
pub const MACHINE_BUSY_PERCENT: f64 = 95.0;

/// Why the generator was the limit in `u`'s measured window (empty: it was not).
pub fn reasons(u: &ResourceUsage) -> Vec<String> {
    let mut why = cpu_reasons(u);
    why.extend(lag_reason(u));
    why
}

/// lockbench's timers fired late: the pacer could not keep its schedule.
fn lag_reason(u: &ResourceUsage) -> Option<String> {
    u.timer_lag_p99_ms.filter(|&l| l > LAG_MS).map(|lag| {
        format!(
            "lockbench's timers fired {lag:.1} ms late (p99): the pacer could not keep its schedule"
        )
    })
}

/// Could lockbench being the limit explain a step missing its objective? Running out of CPU
/// always could. Late timers alone only delay starts (the open-loop schedule still fires every
/// op, late), so they explain a miss only when the achieved rate kept up and the step's p99
/// minus the timers' p99 lag is within the objective.
pub fn explains_miss(u: &ResourceUsage, p99_ms: Option<f64>, slo_ms: f64, kept_up: bool) -> bool {
    if !cpu_reasons(u).is_empty() {
        return true;
    }
    match (lag_reason(u), u.timer_lag_p99_ms) {
        (Some(_), Some(lag)) => kept_up && p99_ms.is_none_or(|p| p - lag <= slo_ms),
        _ => false,
    }
}

/// The CPU-related reasons: the machine, a thread, or most of a saturated machine.
fn cpu_reasons(u: &ResourceUsage) -> Vec<String> {
    let mut why = Vec::new();
    let gen_cpu = u.generator_cpu_percent();
    let machine = u.cpus.max(1) as f64 * 100.0;
    if gen_cpu >= MACHINE_FRACTION * machine {
        why.push(format!(
            "lockbench used {gen_cpu:.0}% CPU, {:.0}% of the machine's {} cores",
            gen_cpu / machine * 100.0,
            u.cpus
        ));
    }
    let busiest = u
        .processes
        .iter()
        .filter_map(|p| p.busiest_thread_cpu_percent)
        .fold(0.0, f64::max);
    if busiest >= THREAD_PERCENT {
        why.push(format!("a lockbench thread ran at {busiest:.0}% of a core"));
    }
    let samples = &u.machine_cpu_percent;
    if !samples.is_empty() {
        let busy = samples.iter().sum::<f64>() / samples.len() as f64;
        let servers = u.server_cpu_percent();
        // Only when lockbench holds at least half of what is busy: on a shared machine the
        // rest may be anyone's.
        let busy_cores = busy / 100.0 * machine;
        if busy >= MACHINE_BUSY_PERCENT && gen_cpu > servers && gen_cpu >= 0.5 * busy_cores {
            why.push(format!(
                "the machine was {busy:.0}% busy and lockbench used most of it ({gen_cpu:.0}% CPU; the servers {servers:.0}%)"
            ));
        }
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_results::resources::ProcessUsage;

    fn usage(gen_cpu: f64, thread: f64, lag: f64, machine: f64, server: f64) -> ResourceUsage {
        ResourceUsage {
            cpus: 2,
            machine_cpu_percent: vec![machine],
            timer_lag_p99_ms: Some(lag),
            processes: vec![
                ProcessUsage {
                    name: "lockbench".into(),
                    role: "generator".into(),
                    cpu_percent_mean: gen_cpu,
                    busiest_thread_cpu_percent: Some(thread),
                    ..ProcessUsage::default()
                },
                ProcessUsage {
                    name: "redis".into(),
                    role: "server".into(),
                    cpu_percent_mean: server,
                    ..ProcessUsage::default()
                },
            ],
            ..ResourceUsage::default()
        }
    }

    #[test]
    fn each_limit_is_named_and_an_idle_generator_is_not_bound() {
        assert!(reasons(&usage(40.0, 30.0, 1.0, 60.0, 50.0)).is_empty());
        assert!(
            reasons(&usage(185.0, 60.0, 1.0, 99.0, 10.0))[0].contains("of the machine's 2 cores")
        );
        assert!(reasons(&usage(95.0, 93.0, 1.0, 60.0, 50.0))[0].contains("thread ran at 93%"));
        assert!(reasons(&usage(40.0, 30.0, 25.0, 60.0, 50.0))[0].contains("25.0 ms late"));
        let busy = reasons(&usage(120.0, 50.0, 1.0, 98.0, 70.0));
        // Busy because of someone else: lockbench's 40% of a 196%-busy machine is not it.
        assert!(reasons(&usage(40.0, 30.0, 1.0, 98.0, 10.0)).is_empty());
        assert_eq!(busy.len(), 1);
        assert!(busy[0].contains("98% busy"));
        // Late timers explain a miss only if the p99 without them would have met the objective.
        let lagging = usage(40.0, 30.0, 25.0, 60.0, 50.0);
        assert!(explains_miss(&lagging, Some(70.0), 50.0, true));
        assert!(!explains_miss(&lagging, Some(90.0), 50.0, true));
        assert!(!explains_miss(&lagging, Some(70.0), 50.0, false));
        assert!(explains_miss(
            &usage(185.0, 60.0, 1.0, 99.0, 10.0),
            Some(900.0),
            50.0,
            false
        ));
        assert!(!explains_miss(
            &usage(40.0, 30.0, 1.0, 60.0, 50.0),
            Some(70.0),
            50.0,
            true
        ));
        // A busy machine where the servers use more than lockbench: the backend's limit.
        assert!(reasons(&usage(60.0, 50.0, 1.0, 98.0, 130.0)).is_empty());
    }
}
