//! The progress bar shown while a backend runs: time through warm-up and measurement, and
//! acquisitions so far. Reads the client loop's relaxed counters; never touches the hot path.
//!
//! It also raises the stall alarm live: when no client (in process or in a worker) has been
//! granted anything for `stall_alarm`, an `ALARM:` line is printed at once (and again when
//! progress resumes), even with `--quiet`. The results' `stalls` are computed afterwards from
//! the history; this line is for the person watching.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lockbench_workloads::RunControl;
use std::time::{Duration, Instant};

/// Shows progress of one backend's run until dropped.
pub struct Progress {
    bar: ProgressBar,
    task: tokio::task::JoinHandle<()>,
}

impl Progress {
    /// Starts showing progress of `backend` for `total` (warm-up + duration).
    pub fn start(
        backend: &str,
        total: Duration,
        stall_alarm: Duration,
        control: RunControl,
        quiet: bool,
    ) -> Progress {
        let bar = ProgressBar::with_draw_target(
            Some(total.as_millis() as u64),
            if quiet {
                ProgressDrawTarget::hidden()
            } else {
                ProgressDrawTarget::stderr()
            },
        );
        // The bar in colour only where stderr is coloured (`--color`, NO_COLOR).
        let template = if crate::color::stderr() {
            "{prefix:>18} [{bar:30.cyan/blue}] {elapsed_precise} {msg}"
        } else {
            "{prefix:>18} [{bar:30}] {elapsed_precise} {msg}"
        };
        bar.set_style(
            ProgressStyle::with_template(template)
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(backend.to_string());
        let b = bar.clone();
        let started = Instant::now();
        let name = backend.to_string();
        let task = tokio::spawn(async move {
            let (mut last, mut last_change, mut alarmed) = (0, Instant::now(), false);
            loop {
                let now = control.acquisitions();
                b.set_position(started.elapsed().as_millis() as u64);
                if control.stopped() {
                    // The clients are done; reading the history back can take minutes on a
                    // long run, and no grant is expected meanwhile.
                    b.set_message(format!("{now} acquisitions; analysing the history"));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                b.set_message(format!("{now} acquisitions"));
                if now != last {
                    if alarmed {
                        let stalled = last_change.elapsed().as_secs_f64();
                        b.suspend(|| {
                            eprintln!(
                                "ALARM cleared: {name} is making progress again after {stalled:.1}s"
                            );
                        });
                    }
                    (last, last_change, alarmed) = (now, Instant::now(), false);
                } else if !alarmed && !stall_alarm.is_zero() && last_change.elapsed() >= stall_alarm
                {
                    alarmed = true;
                    b.suspend(|| {
                        eprintln!(
                            "ALARM: {name}: no client has been granted a lock for {}s",
                            stall_alarm.as_secs_f64()
                        );
                    });
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Progress { bar, task }
    }

    /// Stops the bar, leaving a summary line.
    pub fn finish(self, summary: String) {
        self.task.abort();
        self.bar.finish_and_clear();
        eprintln!("{:>18}  {summary}", self.bar.prefix());
    }
}
