//! A finished run's history: every op from every client, and every fault the nemesis applied,
//! ordered by time.
//!
//! Clients record into their own buffers (no shared state on the hot path); the buffers are
//! merged here. On disk a history is JSON lines, one [`Op`] per line, so a run that is cut off
//! still leaves every line written so far readable. Fault events (Jepsen's nemesis ops) are
//! lines with `"type":"nemesis"` and the [`FaultEvent`] fields; they are kept apart from the
//! ops in memory so that [`Op`] stays small and `Copy` for the client loop. Server-side
//! observations (who the servers said held each lock, [`ServerObservation`]) are lines with
//! `"type":"server"`, kept apart the same way.
//!
//! A backend whose run finished normally (every client stopped and every op written) has one
//! more line after its last op: `{"backend":..,"type":"end","t":..,"ops":..}` ([`End`]). A
//! history without it was cut off (disk full, `kill -9`, a crash) or written before end lines
//! existed: its tail may miss some clients' last ops while holding other clients' later ones,
//! so the analysis judges it only up to its horizon (`lockbench_analysis::horizon`).

pub mod compact;
pub mod file;
pub mod ordered;

use crate::fault::FaultEvent;
use crate::op::Op;
use crate::server_view::{ServerLine, ServerObservation, ServerTag};
use crate::time::Nanos;
use ordered::{Event, Ordered, Scan};
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Write};
use std::path::Path;

/// Ops from all clients, sorted by time (ties broken by client, invocations first), and the
/// fault events and server observations of the same run, each sorted by time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    ops: Vec<Op>,
    faults: Vec<FaultEvent>,
    server: Vec<ServerObservation>,
    /// Read from a file without an end line (see the module docs).
    cut_off: bool,
}

/// The end line: what a backend's history writer had written when its run finished normally.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    /// The latest op time written, ns on the run's clock.
    #[serde(rename = "t")]
    pub time: Nanos,
    /// Op lines written.
    pub ops: u64,
}

impl End {
    /// The end line, with `backend` first as on every line of a run directory's history.
    pub fn line(&self, backend: Option<&str>) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        crate::op::write_line_start(backend, &mut out);
        let rest = format!(
            "\"type\":\"end\",\"t\":{},\"ops\":{}}}\n",
            self.time.0, self.ops
        );
        out.extend_from_slice(rest.as_bytes());
        out
    }

    /// `true` for an end line.
    pub fn is_line(line: &str) -> bool {
        line.contains("\"type\":\"end\"")
    }
}

/// A fault event as one history line: `{"type":"nemesis","t":..,"fault":..,"phase":..}`.
#[derive(Serialize, Deserialize)]
pub struct NemesisLine<E> {
    /// Always `nemesis`.
    #[serde(rename = "type")]
    pub kind: NemesisTag,
    /// The event.
    #[serde(flatten)]
    pub event: E,
}

/// The `type` of a nemesis line.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NemesisTag {
    /// A fault event.
    Nemesis,
}

impl History {
    /// Merges per-client buffers (or any unordered ops) into one time-ordered history.
    pub fn from_unordered(ops: Vec<Op>) -> History {
        History::with_faults(ops, Vec::new())
    }

    /// Merges ops and fault events (each in any order) into one time-ordered history.
    pub fn with_faults(mut ops: Vec<Op>, mut faults: Vec<FaultEvent>) -> History {
        // Stable sort: ops of one client recorded at the same instant keep their order.
        ops.sort_by_key(|op| op.time);
        faults.sort_by_key(|f| f.time);
        History {
            ops,
            faults,
            server: Vec::new(),
            cut_off: false,
        }
    }

    /// This history marked as cut off (`true`: read from a file without an end line).
    pub fn with_cut_off(mut self, cut_off: bool) -> History {
        self.cut_off = cut_off;
        self
    }

    /// `true` when the history was read from a file without an end line: it may miss some
    /// clients' last ops (see the module docs).
    pub fn is_cut_off(&self) -> bool {
        self.cut_off
    }

    /// This history with `server` (in any order) as its server-side observations.
    pub fn with_server(mut self, mut server: Vec<ServerObservation>) -> History {
        server.sort_by_key(|o| o.time);
        self.server = server;
        self
    }

    /// The server-side observations, in time order (empty when the run observed none).
    pub fn server(&self) -> &[ServerObservation] {
        &self.server
    }

    /// The ops, in time order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The fault events, in time order.
    pub fn faults(&self) -> &[FaultEvent] {
        &self.faults
    }

    /// Number of ops.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// `true` when no op was recorded.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Writes one JSON object per line: the ops, then the fault events.
    pub fn write_jsonl(&self, mut out: impl Write) -> io::Result<()> {
        write_jsonl(&self.ops, &mut out)?;
        for event in &self.faults {
            serde_json::to_writer(
                &mut out,
                &NemesisLine {
                    kind: NemesisTag::Nemesis,
                    event,
                },
            )?;
            out.write_all(b"\n")?;
        }
        for observation in &self.server {
            serde_json::to_writer(
                &mut out,
                &ServerLine {
                    kind: ServerTag::Server,
                    observation,
                },
            )?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Reads a JSON-lines history. A torn last line (the writer was killed mid-line) is
    /// ignored; any other bad line is an error naming its line number. End lines are skipped:
    /// text read this way counts as complete ([`History::read_file`] tells).
    pub fn read_jsonl(input: impl BufRead) -> io::Result<History> {
        let lines: Vec<String> = input.lines().collect::<io::Result<_>>()?;
        let mut ops = Vec::with_capacity(lines.len());
        let mut faults = Vec::new();
        let mut server = Vec::new();
        let mut chain = compact::Chain::default();
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            if line.contains("\"nemesis\"")
                && let Ok(n) = serde_json::from_str::<NemesisLine<FaultEvent>>(line)
            {
                faults.push(n.event);
                continue;
            }
            if line.contains("\"server\"")
                && let Ok(s) = serde_json::from_str::<ServerLine<ServerObservation>>(line)
            {
                server.push(s.observation);
                continue;
            }
            if compact::is_format_line(line) || End::is_line(line) {
                continue;
            }
            match chain.parse_op(line) {
                Ok((_, op)) => ops.push(op),
                Err(_) if i + 1 == lines.len() => break,
                Err(e) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("history line {}: {e}", i + 1),
                    ));
                }
            }
        }
        Ok(History::with_faults(ops, faults).with_server(server))
    }
}

/// The events of `backend` (every line when `None`) in a history file from byte `offset`, in
/// file order. A bad last line (torn by a kill) is dropped; a bad line elsewhere is an error.
pub fn events(
    path: &Path,
    offset: u64,
    backend: Option<&str>,
) -> io::Result<impl Iterator<Item = io::Result<Event>>> {
    let backend = backend.map(str::to_string);
    let mut reader = file::open(path, offset)?;
    // One buffer for every line: the stream allocates nothing per op.
    let mut line = Vec::with_capacity(512);
    let mut number = 0u64;
    let mut chain = compact::Chain::default();
    Ok(std::iter::from_fn(move || {
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => number += 1,
            }
            match ordered::parse_line(
                &String::from_utf8_lossy(&line),
                backend.as_deref(),
                &mut chain,
            ) {
                Ok(Some(e)) => return Some(Ok(e)),
                Ok(None) => continue,
                // A bad last line is one torn by a kill.
                Err(_) if reader.fill_buf().map_or(true, |b| b.is_empty()) => return None,
                Err(e) => {
                    return Some(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("history line {number}: {e}"),
                    )));
                }
            }
        }
    }))
}

/// The first pass over `backend`'s lines: its fault events and the ops' lateness.
pub fn scan(path: &Path, offset: u64, backend: Option<&str>) -> io::Result<Scan> {
    let mut scan = Scan::default();
    for e in events(path, offset, backend)? {
        scan.observe(&e?);
    }
    Ok(scan)
}

/// `backend`'s ops in time order, for a stream whose lateness is at most `window` ns (from
/// [`scan`], or measured by the writer).
pub fn ordered_ops(
    path: &Path,
    offset: u64,
    backend: Option<&str>,
    window: u64,
) -> io::Result<Ordered<impl Iterator<Item = Op>>> {
    let ops = events(path, offset, backend)?.filter_map(|e| match e {
        Ok(Event::Op(op)) => Some(op),
        _ => None,
    });
    Ok(Ordered::new(ops, window))
}

impl History {
    /// Reads all of `backend`'s lines of a history file into memory (the in-memory path; the
    /// streaming one is [`scan`] + [`ordered_ops`]); cut off when the backend has no end line.
    pub fn read_file(path: &Path, backend: Option<&str>) -> io::Result<History> {
        let (mut ops, mut faults, mut ended) = (Vec::new(), Vec::new(), false);
        for e in events(path, 0, backend)? {
            match e? {
                Event::Op(op) => ops.push(op),
                Event::Fault(f) => faults.push(f),
                Event::End(_) => ended = true,
            }
        }
        Ok(History::with_faults(ops, faults).with_cut_off(!ended))
    }
}

/// Appends ops as JSON lines (used both for the final history and for chunks written while the
/// run goes).
pub fn write_jsonl(ops: &[Op], mut out: impl Write) -> io::Result<()> {
    for op in ops {
        serde_json::to_writer(&mut out, op)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClientId, KeyId, Nanos, OpF};

    #[test]
    fn jsonl_round_trip_keeps_order_and_survives_a_torn_last_line() {
        let ops = vec![
            Op::invoke(Nanos(20), ClientId(1), OpF::Acquire, KeyId(0)),
            Op::invoke(Nanos(10), ClientId(0), OpF::Acquire, KeyId(0)),
        ];
        let h = History::from_unordered(ops);
        assert_eq!(h.ops()[0].client, ClientId(0));
        let mut buf = Vec::new();
        h.write_jsonl(&mut buf).unwrap();
        buf.extend_from_slice(b"{\"t\":30,\"cli");
        let back = History::read_jsonl(buf.as_slice()).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn fault_events_round_trip_as_nemesis_lines() {
        use crate::{FaultEvent, FaultPhase};
        let ev = FaultEvent {
            time: Nanos(5),
            fault: crate::FaultKind::Pause,
            phase: FaultPhase::Start,
            targets: vec!["client0".into()],
            note: "SIGSTOP pid 7".into(),
            applied: true,
        };
        let h = History::with_faults(
            vec![Op::invoke(Nanos(1), ClientId(0), OpF::Acquire, KeyId(0))],
            vec![ev],
        );
        let mut buf = Vec::new();
        h.write_jsonl(&mut buf).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.contains("\"type\":\"nemesis\""), "{text}");
        assert_eq!(History::read_jsonl(buf.as_slice()).unwrap(), h);
    }

    #[test]
    fn server_observations_round_trip_as_server_lines() {
        use crate::{ClientId, KeyId, ServerObservation};
        let h = History::from_unordered(vec![Op::invoke(
            Nanos(1),
            ClientId(0),
            OpF::Acquire,
            KeyId(0),
        )])
        .with_server(vec![
            ServerObservation::blind(Nanos(9), KeyId(0)),
            ServerObservation::holder(Nanos(2), KeyId(0), Some(ClientId(0))),
        ]);
        assert_eq!(h.server()[0].time, Nanos(2));
        let mut buf = Vec::new();
        h.write_jsonl(&mut buf).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.contains("{\"type\":\"server\",\"t\":2,"), "{text}");
        assert_eq!(History::read_jsonl(buf.as_slice()).unwrap(), h);
    }

    #[test]
    fn a_bad_line_in_the_middle_is_an_error_with_its_number() {
        let text = "{\"t\":1}\nnot json\n{\"t\":2}\n";
        let err = History::read_jsonl(text.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }
}
