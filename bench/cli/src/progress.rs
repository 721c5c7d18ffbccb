//! The progress bar shown while a backend runs: time through warm-up and measurement, and
//! acquisitions so far. Reads the client loop's relaxed counters; never touches the hot path.

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
    pub fn start(backend: &str, total: Duration, control: RunControl, quiet: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(
            Some(total.as_millis() as u64),
            if quiet {
                ProgressDrawTarget::hidden()
            } else {
                ProgressDrawTarget::stderr()
            },
        );
        bar.set_style(
            ProgressStyle::with_template("{prefix:>18} [{bar:30}] {elapsed_precise} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(backend.to_string());
        let b = bar.clone();
        let started = Instant::now();
        let task = tokio::spawn(async move {
            loop {
                b.set_position(started.elapsed().as_millis() as u64);
                b.set_message(format!("{} acquisitions", control.acquisitions()));
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
