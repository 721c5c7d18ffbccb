//! The history (`history.jsonl.zst`) turned into what the charts draw: per backend, the acquisitions with their
//! latency, the holds (acquire `ok` to release `invoke`, as the mutual-exclusion checker sees
//! them) and the fencing writes; plus the fault events of the nemesis.
//!
//! Memory is bounded whatever the run's length: grants fold into time buckets past a cap (see
//! [`super::grants`]); holds and writes are kept up to [`MAX_HOLDS`] and [`MAX_WRITES`] (the
//! first ones in the file, plus every stale write up to the same cap), and the charts that draw
//! them say how many were left out.
//!
//! Reading is lenient on purpose: a line that is not JSON, or neither an op nor a fault event,
//! is skipped and counted. History lines carry times in nanoseconds on each backend's own
//! clock, so series are kept per backend and never compared on one time axis.

use super::grants::Grants;
use lockbench_core::FaultKind;
use lockbench_core::history::End;
use lockbench_core::history::compact::{self, Chain};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::io::BufRead;

/// Holds kept per backend (a Gantt chart draws a few hundred).
pub(crate) const MAX_HOLDS: usize = 200_000;
/// Writes kept per backend.
pub(crate) const MAX_WRITES: usize = 200_000;

/// One history line, every field optional so both ops and fault events (and shapes added
/// later) deserialize. The identifier fields borrow from the line (lockbench writes them
/// without escapes), so reading an op allocates nothing.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default, borrow)]
    backend: Option<&'a str>,
    #[serde(default)]
    t: Option<u64>,
    /// The compact encoding's relative time and token (`lockbench_core::history::compact`).
    #[serde(default)]
    dt: Option<i64>,
    #[serde(default)]
    dk: Option<i64>,
    #[serde(default)]
    client: Option<u32>,
    #[serde(default, rename = "type", borrow)]
    ty: Option<&'a str>,
    #[serde(default, borrow)]
    f: Option<&'a str>,
    #[serde(default)]
    key: Option<u32>,
    #[serde(default)]
    token: Option<u64>,
    #[serde(default)]
    stale: Option<bool>,
    #[serde(default)]
    fault: Option<Value>,
    #[serde(default, borrow)]
    phase: Option<&'a str>,
    #[serde(default)]
    targets: Option<Value>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    applied: Option<bool>,
}

/// A lock held by one client: from its acquire's `ok` to its release's `invoke`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hold {
    pub client: u32,
    pub key: u32,
    pub start: u64,
    pub end: u64,
    /// `false` when the history ends (or the client was retired) before a release.
    pub released: bool,
}

/// A write to the protected resource with its fencing token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Write {
    pub t: u64,
    pub key: u32,
    pub token: u64,
    /// The resource accepted it (`ok`) rather than rejecting it (`fail`).
    pub accepted: bool,
    /// The resource had already seen a higher token.
    pub stale: bool,
}

/// A fault window (or an instant, when `end == start` and no phase was given).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FaultWindow {
    /// The backend whose run it happened in; `None` means every backend.
    pub backend: Option<String>,
    pub fault: String,
    pub targets: String,
    /// What charts and tables call it ([`lockbench_core::fault_label`]: kind and targets).
    pub label: String,
    pub note: String,
    pub applied: bool,
    pub start: u64,
    /// `None` while the fault was never stopped in the history.
    pub end: Option<u64>,
}

/// Everything one backend's history lines say.
#[derive(Clone, Debug, Default)]
pub(crate) struct Trace {
    pub backend: String,
    /// Acquire completions with `ok`: (time of the grant, latency from the invoke) in ns.
    pub grants: Grants,
    /// Acquire completions with `fail` or `info`.
    pub failures: u64,
    /// The first [`MAX_HOLDS`] holds closed.
    pub holds: Vec<Hold>,
    /// Holds left out past [`MAX_HOLDS`].
    pub holds_dropped: u64,
    /// The first [`MAX_WRITES`] writes with a token, and stale ones up to as many again.
    pub writes: Vec<Write>,
    /// Writes left out.
    pub writes_dropped: u64,
    pub keys: BTreeSet<u32>,
    pub first_t: u64,
    pub last_t: u64,
    /// Open state while reading: per client, the pending acquire invoke and the open hold.
    pending: HashMap<u32, u64>,
    open: HashMap<u32, Hold>,
}

/// An op of the history, as an excerpt shows it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ExcerptOp {
    pub t: u64,
    pub client: u32,
    /// `acquire`, `release`, `write`, ...
    pub f: String,
    /// `invoke`, `ok`, `fail`, `info`.
    pub ty: String,
    pub key: u32,
    pub token: Option<u64>,
    pub stale: Option<bool>,
}

/// The ops of one backend's history around a moment (a finding's time).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Excerpt {
    pub backend: String,
    /// What happened then (a finding kind's name).
    pub what: String,
    pub at: u64,
    /// The ops nearest `at`, in time order.
    pub ops: Vec<ExcerptOp>,
}

/// Ops an excerpt shows, and how far from its moment they may be.
pub(crate) const EXCERPT_OPS: usize = 16;
const EXCERPT_SPAN_NS: u64 = 50_000_000;

/// A moment to excerpt: (backend, what, time in ns on its history's clock).
pub(crate) type Moment = (String, String, u64);

/// The parsed history.
#[derive(Clone, Debug, Default)]
pub(crate) struct Traces {
    /// The ops around each moment asked for ([`Traces::read_with`]), in the order asked.
    pub excerpts: Vec<Excerpt>,
    /// One per backend, in order of first appearance.
    pub backends: Vec<Trace>,
    pub faults: Vec<FaultWindow>,
    /// Lines that were neither ops nor fault events.
    pub skipped: usize,
}

impl Traces {
    /// The trace of `backend`, if the history has one.
    pub fn get(&self, backend: &str) -> Option<&Trace> {
        self.backends.iter().find(|t| t.backend == backend)
    }

    /// The fault windows that apply to `backend`.
    pub fn faults_of<'a>(&'a self, backend: &'a str) -> impl Iterator<Item = &'a FaultWindow> {
        self.faults
            .iter()
            .filter(move |f| f.backend.as_deref().is_none_or(|b| b == backend))
    }

    /// Reads a JSON-lines history (one line buffer reused, string fields borrowed from it:
    /// an hour-long history is hundreds of millions of lines).
    #[cfg(test)]
    pub fn read(input: impl BufRead) -> Traces {
        Traces::read_with(input, &[])
    }

    /// [`Traces::read`], keeping the ops around each of `moments`.
    pub fn read_with(mut input: impl BufRead, moments: &[Moment]) -> Traces {
        let mut traces = Traces {
            excerpts: moments
                .iter()
                .map(|(backend, what, at)| Excerpt {
                    backend: backend.clone(),
                    what: what.clone(),
                    at: *at,
                    ops: Vec::new(),
                })
                .collect(),
            ..Traces::default()
        };
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut buf = Vec::with_capacity(512);
        let mut chain = Chain::default();
        loop {
            buf.clear();
            match input.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&buf);
            // The format line says in words what `dt` and `dk` are (strings, not numbers); the
            // end line only says the run finished.
            if line.trim().is_empty() || compact::is_format_line(&line) || End::is_line(&line) {
                continue;
            }
            let Ok(mut l) = serde_json::from_str::<Line>(&line) else {
                traces.skipped += 1;
                continue;
            };
            if l.fault.is_some() || l.ty == Some("nemesis") {
                traces.fault(l);
                continue;
            }
            l.t = chain.time(l.t, l.dt);
            l.token = chain.token(l.token, l.dk);
            let backend = l.backend.unwrap_or("(unnamed)");
            let i = match index.get(backend) {
                Some(i) => *i,
                None => {
                    index.insert(backend.to_string(), traces.backends.len());
                    traces.backends.push(Trace {
                        backend: backend.to_string(),
                        first_t: u64::MAX,
                        ..Trace::default()
                    });
                    traces.backends.len() - 1
                }
            };
            if !traces.backends[i].op(&l) {
                traces.skipped += 1;
            }
            for e in traces.excerpts.iter_mut().filter(|e| e.backend == backend) {
                e.take(&l);
            }
        }
        for t in &mut traces.backends {
            t.finish();
        }
        for e in &mut traces.excerpts {
            e.finish();
        }
        traces
    }

    fn fault(&mut self, l: Line) {
        let Some(t) = l.t else {
            self.skipped += 1;
            return;
        };
        let fault = match &l.fault {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Object(o)) => o
                .get("fault")
                .and_then(Value::as_str)
                .unwrap_or("fault")
                .to_string(),
            _ => l.f.unwrap_or("fault").to_string(),
        };
        let list: Vec<String> = match &l.targets {
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string())
                })
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(v) => vec![v.to_string()],
            None => Vec::new(),
        };
        let targets = list.join(", ");
        let label = label_of(&fault, &list);
        match l.phase {
            Some("stop") => {
                let open = self.faults.iter_mut().rev().find(|w| {
                    w.end.is_none()
                        && w.fault == fault
                        && w.backend.as_deref() == l.backend
                        && w.start <= t
                });
                match open {
                    Some(w) => w.end = Some(t),
                    None => self.skipped += 1,
                }
            }
            phase => self.faults.push(FaultWindow {
                backend: l.backend.map(str::to_string),
                fault,
                targets,
                label,
                note: l.note.unwrap_or_default(),
                applied: l.applied.unwrap_or(true),
                start: t,
                // No phase at all: an instantaneous event.
                end: if phase.is_none() { Some(t) } else { None },
            }),
        }
    }
}

impl Excerpt {
    /// Keeps `l` when it is an op near the moment.
    fn take(&mut self, l: &Line) {
        let (Some(t), Some(client), Some(ty), Some(f)) = (l.t, l.client, l.ty, l.f) else {
            return;
        };
        if t.abs_diff(self.at) > EXCERPT_SPAN_NS {
            return;
        }
        self.ops.push(ExcerptOp {
            t,
            client,
            f: f.to_string(),
            ty: ty.to_string(),
            key: l.key.unwrap_or(0),
            token: l.token,
            stale: l.stale,
        });
        // Bounded: the nearest ones win.
        if self.ops.len() > 4 * EXCERPT_OPS {
            self.finish();
        }
    }

    /// The [`EXCERPT_OPS`] ops nearest the moment, in time order.
    fn finish(&mut self) {
        let at = self.at;
        self.ops.sort_by_key(|o| o.t.abs_diff(at));
        self.ops.truncate(EXCERPT_OPS);
        self.ops.sort_by_key(|o| o.t);
    }
}

impl Trace {
    /// Records one op line; `false` when it is not an op this renderer knows.
    fn op(&mut self, l: &Line) -> bool {
        let (Some(t), Some(client), Some(ty), Some(f)) = (l.t, l.client, &l.ty, &l.f) else {
            return false;
        };
        let key = l.key.unwrap_or(0);
        self.first_t = self.first_t.min(t);
        self.last_t = self.last_t.max(t);
        self.keys.insert(key);
        match (*f, *ty) {
            ("acquire", "invoke") => {
                self.pending.insert(client, t);
            }
            ("acquire", "ok") => {
                let started = self.pending.remove(&client).unwrap_or(t);
                self.grants.push(t, t.saturating_sub(started));
                if let Some(mut h) = self.open.remove(&client) {
                    h.end = t;
                    self.hold(h);
                }
                self.open.insert(
                    client,
                    Hold {
                        client,
                        key,
                        start: t,
                        end: t,
                        released: false,
                    },
                );
            }
            ("acquire", "fail" | "info") => {
                self.pending.remove(&client);
                self.failures += 1;
            }
            ("release", "invoke") => {
                if let Some(mut h) = self.open.remove(&client) {
                    h.end = t;
                    h.released = true;
                    self.hold(h);
                }
            }
            ("write", "ok" | "fail") => {
                if let Some(token) = l.token {
                    let w = Write {
                        t,
                        key,
                        token,
                        accepted: *ty == "ok",
                        stale: l.stale.unwrap_or(false),
                    };
                    if self.writes.len() < MAX_WRITES
                        || (w.stale && self.writes.len() < 2 * MAX_WRITES)
                    {
                        self.writes.push(w);
                    } else {
                        self.writes_dropped += 1;
                    }
                }
            }
            ("acquire" | "release" | "renew" | "write", _) => {}
            _ => return false,
        }
        true
    }

    fn hold(&mut self, h: Hold) {
        if self.holds.len() < MAX_HOLDS {
            self.holds.push(h);
        } else {
            self.holds_dropped += 1;
        }
    }

    /// Closes holds the history never released (at the last op) and sorts the series.
    fn finish(&mut self) {
        let last = self.last_t;
        let open: Vec<Hold> = self.open.drain().map(|(_, h)| h).collect();
        for mut h in open {
            h.end = last;
            self.hold(h);
        }
        self.pending.clear();
        if self.first_t == u64::MAX {
            self.first_t = 0;
        }
        self.grants.finish();
        self.holds.sort_by_key(|h| (h.start, h.client));
        self.writes.sort_by_key(|w| w.t);
    }
}

/// The chart label of a fault window read from a trace line: its cell and targets when the
/// line names a known fault kind (as every history does), else the name as written.
fn label_of(fault: &str, targets: &[String]) -> String {
    match serde_json::from_value::<FaultKind>(Value::String(fault.to_string())) {
        Ok(kind) => lockbench_core::fault_label(kind, targets),
        Err(_) if targets.is_empty() => fault.to_string(),
        Err(_) => format!("{fault} {}", targets.join(",")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_become_holds_grants_and_writes_and_odd_lines_are_skipped() {
        let text = r#"{"backend":"b","t":10,"client":1,"type":"invoke","f":"acquire","key":0}
{"backend":"b","t":30,"client":1,"type":"ok","f":"acquire","key":0,"token":7}
{"backend":"b","t":31,"client":1,"type":"ok","f":"write","key":0,"token":7,"stale":false}
not json
{"something":"else"}
{"t":35,"fault":"pause","phase":"start","targets":["client1"],"note":"SIGSTOP","applied":true}
{"backend":"b","t":50,"client":1,"type":"invoke","f":"release","key":0}
{"t":60,"fault":"pause","phase":"stop","targets":["client1"],"applied":true}
"#;
        let tr = Traces::read(text.as_bytes());
        assert_eq!(tr.skipped, 2);
        let b = tr.get("b").unwrap();
        assert_eq!(b.grants.per_bucket(1_000), vec![(1, Some((20, 20, 20)))]);
        assert_eq!(b.holds.len(), 1);
        assert_eq!((b.holds[0].start, b.holds[0].end), (30, 50));
        assert_eq!(b.writes.len(), 1);
        assert_eq!(tr.faults.len(), 1);
        assert_eq!(tr.faults[0].end, Some(60));
        assert_eq!(tr.faults_of("b").count(), 1);
    }

    #[test]
    fn compact_lines_read_as_their_absolute_values_and_the_end_line_is_skipped() {
        let text = r#"{"backend":"b","type":"format","history":2,"dt":"..","dk":".."}
{"backend":"b","t":10,"client":1,"type":"invoke","f":"acquire","key":0}
{"backend":"b","dt":20,"client":1,"type":"ok","f":"acquire","key":0,"token":7}
{"backend":"b","dt":1,"client":1,"type":"ok","f":"write","key":0,"dk":0,"stale":false}
{"t":35,"fault":"pause","phase":"start","targets":["client1"],"note":"SIGSTOP","applied":true}
{"backend":"b","t":50,"client":1,"type":"invoke","f":"release","key":0}
{"backend":"b","dt":-5,"client":2,"type":"ok","f":"write","key":0,"token":9,"stale":true}
{"backend":"b","type":"end","t":50,"ops":5}
"#;
        let tr = Traces::read(text.as_bytes());
        assert_eq!(
            tr.skipped, 0,
            "the end line is no op, and not a bad line either"
        );
        let b = tr.get("b").unwrap();
        assert_eq!(b.grants.per_bucket(1_000), vec![(1, Some((20, 20, 20)))]);
        assert_eq!((b.holds[0].start, b.holds[0].end), (30, 50));
        let w: Vec<(u64, u64)> = b.writes.iter().map(|w| (w.t, w.token)).collect();
        assert_eq!(w, vec![(31, 7), (45, 9)]);
    }
}
