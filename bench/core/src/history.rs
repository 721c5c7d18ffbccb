//! A finished run's history: every op from every client, ordered by time.
//!
//! Clients record into their own buffers (no shared state on the hot path); the buffers are
//! merged here. On disk a history is JSON lines, one [`Op`] per line, so a run that is cut off
//! still leaves every line written so far readable.

use crate::op::Op;
use std::io::{self, BufRead, Write};

/// Ops from all clients, sorted by time (ties broken by client, invocations first).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    ops: Vec<Op>,
}

impl History {
    /// Merges per-client buffers (or any unordered ops) into one time-ordered history.
    pub fn from_unordered(mut ops: Vec<Op>) -> History {
        // Stable sort: ops of one client recorded at the same instant keep their order.
        ops.sort_by_key(|op| op.time);
        History { ops }
    }

    /// The ops, in time order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// Number of ops.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// `true` when no op was recorded.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Writes one JSON object per line.
    pub fn write_jsonl(&self, out: impl Write) -> io::Result<()> {
        write_jsonl(&self.ops, out)
    }

    /// Reads a JSON-lines history. A torn last line (the writer was killed mid-line) is
    /// ignored; any other bad line is an error naming its line number.
    pub fn read_jsonl(input: impl BufRead) -> io::Result<History> {
        let lines: Vec<String> = input.lines().collect::<io::Result<_>>()?;
        let mut ops = Vec::with_capacity(lines.len());
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Op>(line) {
                Ok(op) => ops.push(op),
                Err(_) if i + 1 == lines.len() => break,
                Err(e) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("history line {}: {e}", i + 1),
                    ));
                }
            }
        }
        Ok(History::from_unordered(ops))
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
    fn a_bad_line_in_the_middle_is_an_error_with_its_number() {
        let text = "{\"t\":1}\nnot json\n{\"t\":2}\n";
        let err = History::read_jsonl(text.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }
}
