//! The server-side observer of one backend's run (`observe_server = true`): started before
//! the clients connect, stopped after they finished, its observations written to
//! `history.jsonl` as they come (a quarter second at a time, one write each) and handed to
//! the checkers with the rest of the history.
//!
//! It runs in the coordinator, on connections of its own that go straight to the servers
//! (never through a link proxy: link faults are between clients and servers). The requests it
//! sends that the backend's server counters include are counted by the observer itself and
//! taken off the servers' figure, so requests per acquisition stay the clients' own.

use lockbench_core::{Backend, RunClock, ServerObservation, ServerSink};
use lockbench_report::RunDir;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How often the observations so far are appended to `history.jsonl`.
const FLUSH: Duration = Duration::from_millis(250);

/// A running observer.
pub(crate) struct Running {
    task: JoinHandle<Result<(), String>>,
    writer: JoinHandle<Vec<ServerObservation>>,
    sink: ServerSink,
}

/// What the observer left: its observations, the requests it sent that the servers count,
/// and why it observed nothing when the recipe has no observer or it stopped by itself.
pub(crate) struct Finished {
    pub(crate) observations: Vec<ServerObservation>,
    pub(crate) requests: u64,
    pub(crate) failed: Option<String>,
}

/// Starts `backend`'s observer on keys `0..keys`.
pub(crate) fn start<B: Backend>(
    backend: &Arc<B>,
    clock: RunClock,
    keys: u32,
    run_dir: &RunDir,
    name: &'static str,
) -> Running {
    let (tx, mut rx) = mpsc::unbounded_channel::<ServerObservation>();
    let sink = ServerSink::new(move |o| {
        let _ = tx.send(o);
    });
    let task = {
        let (backend, sink) = (backend.clone(), sink.clone());
        tokio::spawn(async move { backend.observe_server(clock, keys, sink).await })
    };
    let run_dir = run_dir.clone();
    let writer = tokio::spawn(async move {
        let mut all = Vec::new();
        let mut written = 0;
        let mut tick = tokio::time::interval(FLUSH);
        loop {
            tokio::select! {
                got = rx.recv() => match got {
                    Some(o) => all.push(o),
                    None => break,
                },
                _ = tick.tick() => {
                    flush(&run_dir, name, &all[written..]);
                    written = all.len();
                }
            }
        }
        flush(&run_dir, name, &all[written..]);
        all
    });
    Running { task, writer, sink }
}

fn flush(run_dir: &RunDir, name: &str, batch: &[ServerObservation]) {
    if let Err(e) = run_dir.append_server(name, batch) {
        tracing::warn!(error = %e, "cannot record server observations");
    }
}

impl Running {
    /// Stops the observer and returns what it saw.
    pub(crate) async fn finish(self) -> Finished {
        let failed = if self.task.is_finished() {
            match self.task.await {
                Ok(Ok(())) => Some("the observer stopped by itself".to_string()),
                Ok(Err(e)) => Some(e),
                Err(e) => Some(format!("the observer panicked: {e}")),
            }
        } else {
            self.task.abort();
            let _ = self.task.await;
            None
        };
        let requests = self.sink.requests();
        // The sink (with the channel's sender) goes with the task; this is the last one.
        drop(self.sink);
        let observations = self.writer.await.unwrap_or_default();
        Finished {
            observations,
            requests,
            failed,
        }
    }
}
