//! What one client slot records while it runs, and the merged output of a run.
//!
//! Ops go into a pre-sized buffer that is shipped to the history writer whenever it fills or
//! a quarter second has passed, so the writer sees the run as it goes and an interrupted run
//! loses at most the last quarter second. Chunks of different slots reach the writer in any
//! order, so the history file is not globally time-ordered: how the analysis reads it back in
//! time order, in bounded memory, is `lockbench_core::history::ordered`. Latencies go into the
//! slot's own HdrHistograms (microseconds, 3 significant digits), merged only when the run
//! ends.

use hdrhistogram::Histogram;
use lockbench_core::{ClientId, ErrorKind, FencingToken, KeyId, Nanos, Op, OpF, OpType};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

const CHUNK: usize = 1024;
const FLUSH_EVERY: Duration = Duration::from_millis(250);
/// Largest latency a histogram holds: one hour, in microseconds.
const MAX_MICROS: u64 = 3_600_000_000;

/// A fresh latency histogram in microseconds.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_MICROS, 3).expect("valid histogram bounds")
}

/// Per-slot counts and histograms.
#[derive(Debug, Clone)]
pub struct WorkerStats {
    /// The client slot (0..clients); survives client replacement.
    pub slot: u32,
    /// Acquisitions whose whole call fell in the measured window.
    pub acquisitions: u64,
    /// Acquisitions in the whole run, warm-up included.
    pub acquisitions_total: u64,
    /// Acquire latency from the *intended* start (coordinated-omission corrected), µs.
    pub acquire_latency: Histogram<u64>,
    /// Acquire latency from the moment the call was made (service time), µs.
    pub acquire_service: Histogram<u64>,
    /// Requests sent by all the clients this slot used, or `None` if the recipe cannot count.
    pub requests_sent: Option<u64>,
    /// Failed (`fail`) and indeterminate (`info`) completions by call and kind.
    pub errors: BTreeMap<(OpF, OpType, ErrorKind), u64>,
    /// How many times the slot's client was retired and replaced after an `info`.
    pub clients_replaced: u32,
}

impl WorkerStats {
    pub(crate) fn new(slot: u32) -> WorkerStats {
        WorkerStats {
            slot,
            acquisitions: 0,
            acquisitions_total: 0,
            acquire_latency: latency_histogram(),
            acquire_service: latency_histogram(),
            requests_sent: Some(0),
            errors: BTreeMap::new(),
            clients_replaced: 0,
        }
    }
}

/// A slot's recorder: its op buffer and its stats.
#[derive(Debug)]
pub struct Recorder {
    ops: Vec<Op>,
    sink: UnboundedSender<Vec<Op>>,
    last_flush: Nanos,
    /// The counts and histograms so far.
    pub stats: WorkerStats,
}

fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).max(1)
}

impl Recorder {
    /// A recorder for `slot` that ships op chunks to `sink`.
    pub fn new(slot: u32, sink: UnboundedSender<Vec<Op>>) -> Recorder {
        Recorder {
            ops: Vec::with_capacity(CHUNK),
            sink,
            last_flush: Nanos(0),
            stats: WorkerStats::new(slot),
        }
    }

    /// Records an op.
    pub fn push(&mut self, op: Op) {
        self.ops.push(op);
        if self.ops.len() >= CHUNK || op.time.saturating_sub(self.last_flush) >= FLUSH_EVERY {
            self.last_flush = op.time;
            self.flush();
        }
    }

    /// Records the completion of `f` and counts it if it is an error.
    #[allow(clippy::too_many_arguments)]
    pub fn complete(
        &mut self,
        time: Nanos,
        client: ClientId,
        f: OpF,
        key: KeyId,
        ty: OpType,
        token: Option<FencingToken>,
        error: Option<ErrorKind>,
    ) {
        if let Some(e) = error {
            *self.stats.errors.entry((f, ty, e)).or_insert(0) += 1;
        }
        self.push(Op::complete(time, client, f, key, ty, token, error));
    }

    /// Counts a granted acquire; `measured` says whether it falls in the measured window.
    pub fn granted(&mut self, measured: bool, intended: Nanos, sent: Nanos, done: Nanos) {
        self.stats.acquisitions_total += 1;
        if measured {
            self.stats.acquisitions += 1;
            let lat = micros(done.saturating_sub(intended));
            let svc = micros(done.saturating_sub(sent));
            self.stats.acquire_latency.saturating_record(lat);
            self.stats.acquire_service.saturating_record(svc);
        }
    }

    /// Adds a retired (or finished) client's request count.
    pub fn add_requests(&mut self, sent: Option<u64>) {
        self.stats.requests_sent = match (self.stats.requests_sent, sent) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
    }

    /// Ships buffered ops to the history writer.
    pub fn flush(&mut self) {
        if !self.ops.is_empty() {
            let full = std::mem::replace(&mut self.ops, Vec::with_capacity(CHUNK));
            // The writer only goes away when the run is being torn down; nothing to do then.
            let _ = self.sink.send(full);
        }
    }

    /// Flushes and hands back the stats.
    pub fn finish(mut self) -> WorkerStats {
        self.flush();
        self.stats
    }
}

/// Everything the client loop measured in one run of one backend.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// One entry per client slot.
    pub workers: Vec<WorkerStats>,
    /// Start of the measured window (end of warm-up).
    pub measure_start: Nanos,
    /// End of the measured window (when the run stopped).
    pub measure_end: Nanos,
    /// The run was stopped early (Ctrl-C).
    pub interrupted: bool,
}

impl RunOutput {
    /// Acquire latency over all slots (from intended start).
    pub fn acquire_latency(&self) -> Histogram<u64> {
        merge(self.workers.iter().map(|w| &w.acquire_latency))
    }

    /// Acquire service time over all slots (from the actual call).
    pub fn acquire_service(&self) -> Histogram<u64> {
        merge(self.workers.iter().map(|w| &w.acquire_service))
    }

    /// Measured acquisitions over all slots.
    pub fn acquisitions(&self) -> u64 {
        self.workers.iter().map(|w| w.acquisitions).sum()
    }

    /// Acquisitions in the whole run including warm-up.
    pub fn acquisitions_total(&self) -> u64 {
        self.workers.iter().map(|w| w.acquisitions_total).sum()
    }

    /// Requests sent by all clients, when every client could count them.
    pub fn requests_sent(&self) -> Option<u64> {
        self.workers.iter().map(|w| w.requests_sent).sum()
    }

    /// Length of the measured window.
    pub fn measured(&self) -> Duration {
        self.measure_end.saturating_sub(self.measure_start)
    }

    /// Error counts over all slots.
    pub fn errors(&self) -> BTreeMap<(OpF, OpType, ErrorKind), u64> {
        let mut all = BTreeMap::new();
        for w in &self.workers {
            for (k, n) in &w.errors {
                *all.entry(*k).or_insert(0) += n;
            }
        }
        all
    }
}

fn merge<'a>(hs: impl Iterator<Item = &'a Histogram<u64>>) -> Histogram<u64> {
    let mut all = latency_histogram();
    for h in hs {
        all.add(h).expect("histograms share bounds");
    }
    all
}
