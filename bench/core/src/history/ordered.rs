//! The history read back as a time-ordered stream, in bounded memory.
//!
//! # Why the file is not in time order
//!
//! Every client slot records into its own buffer and ships it to the writer in chunks (1,024
//! ops or a quarter second, `lockbench_workloads::recorder`); worker processes forward their
//! chunks over a socket. So the file is in *arrival* order: time-ordered within a chunk, but an
//! op can arrive after ops of other slots that are later than it. How much later is bounded by
//! how long a slot can hold an op before shipping it: the flush interval, or, for a slot stuck
//! in one call (a long acquire, a paused worker), the length of that call.
//!
//! # How it is put back in order
//!
//! The writer (or a first pass over the file, [`Scan`]) measures the stream's *lateness*: for
//! every op, how far its time lies behind the latest time seen before it in arrival order; the
//! largest such gap is the window. [`Ordered`] then keeps a min-heap of ops keyed by
//! `(time, arrival index)` and releases the smallest once the latest time seen is more than the
//! window past it: no op still to come can be earlier (its lateness would exceed the window),
//! so the output is exactly the stable sort by time of the arrival order, the order
//! [`History`](super::History) gives in memory. Memory is the ops within one window (a few
//! seconds of the run, the longest blocked call at worst), not the run. If an op does arrive
//! later than the window (a window given too small), iteration fails with
//! [`TooLate`] rather than silently reordering.
//!
//! Fault events are few (one per fault start or stop): they are collected up front (by the
//! runner as they happen, or by [`Scan`]) and merged in by the consumer. So is whether the
//! backend's lines end with an end line ([`End`]), and how far each client's ops reach
//! ([`Reach`]): what the analysis needs to judge a history that was cut off.

use crate::fault::FaultEvent;
use crate::history::compact::{self, Chain};
use crate::history::{End, NemesisLine};
use crate::ids::ClientId;
use crate::op::{Op, OpF};
use crate::time::Nanos;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};

/// One history line.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// An op.
    Op(Op),
    /// A fault event.
    Fault(FaultEvent),
    /// The end line: the backend's run finished normally.
    End(End),
}

/// Parses one history line; `Ok(None)` for a blank line and the format line. A line of
/// another backend (its `"backend"` field, which the writer puts first, is not `backend`) is
/// skipped as `Ok(None)` when `backend` is given. `chain` is the compact encoding's state
/// ([`super::compact`]): one per reader, fed every line of the backend in file order.
pub fn parse_line(
    line: &str,
    backend: Option<&str>,
    chain: &mut Chain,
) -> Result<Option<Event>, serde_json::Error> {
    let line = line.trim_end();
    if line.trim().is_empty() {
        return Ok(None);
    }
    if let (Some(b), Some(rest)) = (backend, line.strip_prefix("{\"backend\":\""))
        && (!rest.starts_with(b) || !rest[b.len()..].starts_with("\","))
    {
        return Ok(None);
    }
    if line.contains("\"nemesis\"")
        && let Ok(n) = serde_json::from_str::<NemesisLine<FaultEvent>>(line)
    {
        return Ok(Some(Event::Fault(n.event)));
    }
    if End::is_line(line) {
        return serde_json::from_str(line).map(|e| Some(Event::End(e)));
    }
    // Server-side observations (`observe_server`) are read by the truth checker's own path.
    if line.contains("\"type\":\"server\"") || compact::is_format_line(line) {
        return Ok(None);
    }
    chain.parse_op(line).map(|(_, op)| Some(Event::Op(op)))
}

/// The running measure of a stream's lateness (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lateness {
    latest: Nanos,
    /// The largest gap so far, ns.
    pub max: u64,
    /// Ops seen.
    pub ops: u64,
}

impl Lateness {
    /// Takes one op's time, in arrival order.
    pub fn observe(&mut self, t: Nanos) {
        self.ops += 1;
        self.max = self.max.max(self.latest.0.saturating_sub(t.0));
        self.latest = self.latest.max(t);
    }

    /// The latest op time seen.
    pub fn latest(&self) -> Nanos {
        self.latest
    }
}

/// Per client, the time of its latest op other than a `write`: how far the ops its own recorder
/// shipped reach. A `write` is left out because the fenced resource's service, not the client,
/// records it when the client runs in a worker process, so it can reach the file ahead of the
/// client's own earlier ops. Bounded by the clients (a replaced client is a new id).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reach(pub BTreeMap<ClientId, Nanos>);

impl Reach {
    /// Takes one op (in any order).
    pub fn observe(&mut self, op: &Op) {
        if op.f != OpF::Write {
            let last = self.0.entry(op.client).or_default();
            *last = (*last).max(op.time);
        }
    }
}

/// What a first pass over one backend's lines finds: its fault events (in file order), the
/// stream's lateness, how far each client's ops reach and whether the lines end with an end
/// line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scan {
    /// Fault events, in file order.
    pub faults: Vec<FaultEvent>,
    /// The ops' lateness.
    pub lateness: Lateness,
    /// How far each client's ops reach.
    pub reach: Reach,
    /// The earliest op's time; `None` without ops.
    pub first: Option<Nanos>,
    /// The end line; `None` for a history that was cut off (or written before end lines).
    pub end: Option<End>,
    /// Lines that were neither (the torn last line of a killed run).
    pub bad_lines: u64,
}

impl Scan {
    /// Takes one parsed line.
    pub fn observe(&mut self, event: &Event) {
        match event {
            Event::Op(op) => {
                self.lateness.observe(op.time);
                self.reach.observe(op);
                self.first = Some(self.first.map_or(op.time, |t| t.min(op.time)));
            }
            Event::Fault(f) => self.faults.push(f.clone()),
            Event::End(e) => self.end = Some(*e),
        }
    }
}

/// An op arrived later than the window allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLate {
    /// The op's time.
    pub time: Nanos,
    /// The window that was too small, ns.
    pub window: u64,
}

impl std::fmt::Display for TooLate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "an op at {} ns arrived later than the {} ns reorder window",
            self.time.0, self.window
        )
    }
}

impl std::error::Error for TooLate {}

struct Keyed(u64, Op);

impl PartialEq for Keyed {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Keyed {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.1.time, self.0).cmp(&(other.1.time, other.0))
    }
}

/// Ops in arrival order in, ops in time order out (see the module docs).
pub struct Ordered<I> {
    input: I,
    window: u64,
    heap: BinaryHeap<Reverse<Keyed>>,
    seq: u64,
    latest: u64,
    last_out: Option<(Nanos, u64)>,
    done: bool,
}

impl<I: Iterator<Item = Op>> Ordered<I> {
    /// Orders `input`, whose lateness is at most `window` ns.
    pub fn new(input: I, window: u64) -> Self {
        Ordered {
            input,
            window,
            heap: BinaryHeap::new(),
            seq: 0,
            latest: 0,
            last_out: None,
            done: false,
        }
    }

    /// The most ops held at once so far is bounded by this; for diagnostics.
    pub fn held(&self) -> usize {
        self.heap.len()
    }

    fn ready(&self) -> bool {
        self.heap.peek().is_some_and(|Reverse(k)| {
            self.done || k.1.time.0.saturating_add(self.window) < self.latest
        })
    }
}

impl<I: Iterator<Item = Op>> Iterator for Ordered<I> {
    type Item = Result<Op, TooLate>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.ready() {
            if self.done {
                return None;
            }
            match self.input.next() {
                Some(op) => {
                    if self.last_out.is_some_and(|last| (op.time, self.seq) < last) {
                        return Some(Err(TooLate {
                            time: op.time,
                            window: self.window,
                        }));
                    }
                    self.latest = self.latest.max(op.time.0);
                    self.heap.push(Reverse(Keyed(self.seq, op)));
                    self.seq += 1;
                }
                None => self.done = true,
            }
        }
        let Reverse(Keyed(seq, op)) = self.heap.pop()?;
        self.last_out = Some((op.time, seq));
        Some(Ok(op))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClientId, KeyId, OpF};

    fn op(t: u64, c: u32) -> Op {
        Op::invoke(Nanos(t), ClientId(c), OpF::Acquire, KeyId(0))
    }

    #[test]
    fn chunks_out_of_order_come_out_as_the_stable_sort() {
        // Two slots' chunks, interleaved as a writer would receive them; equal times keep
        // arrival order.
        let arrival = vec![
            op(10, 0),
            op(20, 0),
            op(30, 0),
            op(5, 1),
            op(20, 1),
            op(25, 1),
            op(40, 0),
            op(35, 1),
        ];
        let mut lateness = Lateness::default();
        arrival.iter().for_each(|o| lateness.observe(o.time));
        assert_eq!(lateness.max, 25);
        let out: Vec<Op> = Ordered::new(arrival.clone().into_iter(), lateness.max)
            .collect::<Result<_, _>>()
            .unwrap();
        let mut sorted = arrival.clone();
        sorted.sort_by_key(|o| o.time);
        assert_eq!(out, sorted);
        // A window too small is an error, never a silent misorder.
        let err = Ordered::new(arrival.into_iter(), 5)
            .collect::<Result<Vec<_>, _>>()
            .unwrap_err();
        assert_eq!(err.time, Nanos(5));
    }

    #[test]
    fn a_scan_finds_the_end_line_and_each_clients_reach_without_writes() {
        let end = End {
            time: Nanos(40),
            ops: 3,
        };
        let mut write = op(35, 1);
        write.f = OpF::Write;
        let c = &mut Chain::default();
        let mut scan = Scan::default();
        for line in [&end.line(Some("other"))[..], &end.line(Some("b"))[..]] {
            let line = std::str::from_utf8(line).unwrap();
            if let Some(e) = parse_line(line, Some("b"), c).unwrap() {
                scan.observe(&e);
            }
        }
        for o in [op(10, 0), op(40, 0), op(20, 1), write] {
            scan.observe(&Event::Op(o));
        }
        assert_eq!(scan.end, Some(end));
        let reach: Vec<(ClientId, Nanos)> = scan.reach.0.into_iter().collect();
        assert_eq!(
            reach,
            vec![(ClientId(0), Nanos(40)), (ClientId(1), Nanos(20))]
        );
    }

    #[test]
    fn lines_of_other_backends_are_skipped() {
        let a =
            r#"{"backend":"redis-setnx","t":1,"client":0,"type":"invoke","f":"acquire","key":0}"#;
        let b =
            r#"{"backend":"redis-setnx-x","t":1,"client":0,"type":"invoke","f":"acquire","key":0}"#;
        let c = &mut Chain::default();
        assert!(matches!(
            parse_line(a, Some("redis-setnx"), c),
            Ok(Some(Event::Op(_)))
        ));
        assert_eq!(parse_line(b, Some("redis-setnx"), c).unwrap(), None);
        assert!(matches!(parse_line(b, None, c), Ok(Some(Event::Op(_)))));
    }
}
