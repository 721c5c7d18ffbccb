//! A history cut off mid-run must not produce false verdicts.
//!
//! Three clients take turns on one key, every hold released before the next grant (no
//! violation). Their ops are shipped the way the recorder ships them (a chunk once an op is a
//! quarter second past the client's last chunk) and written by the history writer, one frame
//! per chunk, then the end line. Cutting that file after any frame, mid-way into the next one
//! (what `ENOSPC` or `kill -9` leaves), gives a history whose tail misses some clients' latest
//! ops: at some cuts one client's release is missing while another client's later grant is
//! there, and the mutex checker run on its own reports an overlap that never happened. The
//! pass must report none, and say instead that the history was cut off at its horizon (the
//! earliest, over clients, of the latest op the file holds of each), streamed and in memory
//! alike; a real overlap before the horizon must still be found.

use crate::workload;
use lockbench_analysis::horizon::{self, CutOff};
use lockbench_analysis::pass::{Analysed, Params, Pass};
use lockbench_analysis::{Safety, Validity, mutex};
use lockbench_core::history::End;
use lockbench_core::history::file::{FrameWriter, append_frame};
use lockbench_core::{ClientId, FencingToken, History, KeyId, Nanos, Op, OpF, OpType};
use std::path::Path;
use std::time::Duration;

const MS: u64 = 1_000_000;
const CLIENTS: u32 = 3;
/// The recorder's flush interval.
const FLUSH: u64 = 250 * MS;
const HOLDS: u64 = 300;

/// When hold `k` is granted: every 10 ms.
fn grant(k: u64) -> u64 {
    (k + 2) * 10 * MS
}

/// Each client's ops: hold `k` (client `k % 3`) is granted at [`grant`] after a 15 ms wait,
/// writes with its token, and releases 6 ms after its grant, 4 ms before the next one; hold
/// `late`, if given, releases 11 ms after its grant, 1 ms into the next client's hold.
fn holds(late: Option<u64>) -> Vec<Vec<Op>> {
    let mut clients = vec![Vec::new(); CLIENTS as usize];
    for k in 0..HOLDS {
        let (client, key, token) = (ClientId((k % 3) as u32), KeyId(0), FencingToken(k + 1));
        let t = grant(k);
        let release = if late == Some(k) {
            t + 11 * MS
        } else {
            t + 6 * MS
        };
        let complete = |at: u64, f: OpF, token: Option<FencingToken>| {
            Op::complete(Nanos(at), client, f, key, OpType::Ok, token, None)
        };
        let mut write = complete(t + 2 * MS, OpF::Write, Some(token));
        write.stale = Some(false);
        clients[client.0 as usize].extend([
            Op::invoke(Nanos(t - 15 * MS), client, OpF::Acquire, key),
            complete(t, OpF::Acquire, Some(token)),
            Op::invoke(Nanos(t + MS), client, OpF::Write, key),
            write,
            Op::invoke(Nanos(release), client, OpF::Release, key),
            complete(release + MS, OpF::Release, None),
        ]);
    }
    clients
}

/// The clients' ops in chunks, in the order the writer receives them: a client ships its
/// buffer once an op is `FLUSH` past its last shipment, and the rest when the run stops.
fn arrival(clients: &[Vec<Op>]) -> Vec<Vec<Op>> {
    let stop = Nanos(grant(HOLDS));
    let mut shipped = Vec::new();
    for ops in clients {
        let (mut chunk, mut last) = (Vec::new(), Nanos(0));
        for op in ops {
            chunk.push(*op);
            if op.time.0 - last.0 >= FLUSH {
                last = op.time;
                shipped.push((last, std::mem::take(&mut chunk)));
            }
        }
        if !chunk.is_empty() {
            shipped.push((stop, chunk));
        }
    }
    shipped.sort_by_key(|(at, chunk)| (*at, chunk[0].client));
    shipped.into_iter().map(|(_, chunk)| chunk).collect()
}

/// Writes the chunks as the history writer does, one frame each, then the end line; returns
/// the file's length after each chunk.
fn write(path: &Path, chunks: &[Vec<Op>]) -> Vec<u64> {
    let mut w = FrameWriter::append(path).unwrap();
    let mut lengths = Vec::new();
    for chunk in chunks {
        chunk.iter().for_each(|op| w.push_op(op, Some("b")));
        w.flush().unwrap();
        lengths.push(w.len());
    }
    drop(w);
    let last = chunks.iter().flatten().map(|o| o.time).max().unwrap();
    let ops = chunks.iter().map(|c| c.len() as u64).sum();
    append_frame(path, &End { time: last, ops }.line(Some("b"))).unwrap();
    lengths
}

/// The earliest, over clients, of each one's latest op but writes, in `ops` (0 when a client
/// has none): computed here independently of `lockbench_analysis::horizon`.
fn expected_horizon(ops: &[Op]) -> Nanos {
    (0..CLIENTS)
        .map(|c| {
            let own = ops.iter().filter(|o| o.client.0 == c && o.f != OpF::Write);
            own.map(|o| o.time).max().unwrap_or_default()
        })
        .min()
        .unwrap()
}

fn params(clients: &[Vec<Op>]) -> Params {
    Params {
        workload: workload(CLIENTS, 0.0),
        measure_start: Nanos(0),
        measure_end: clients.iter().flatten().map(|o| o.time).max().unwrap(),
        stall_alarm: Duration::from_millis(100),
    }
}

/// The pass over `path`, streamed and in memory: they must agree.
fn pass(p: &Params, path: &Path) -> Analysed {
    let streamed = Pass::run_file(p, path, 0, Some("b")).unwrap();
    let memory = Pass::run_in_memory(p, &History::read_file(path, Some("b")).unwrap());
    assert_eq!(streamed.outcomes, memory.outcomes);
    assert_eq!(streamed.stalls, memory.stalls);
    assert_eq!(streamed.ops, memory.ops);
    streamed
}

fn mutex_violations(a: &Analysed) -> u64 {
    use lockbench_analysis::figures::Reports;
    a.outcomes.mutex().unwrap().violations
}

/// One cut: the file's first `len` bytes.
struct Cut {
    /// The pass's figures.
    analysed: Analysed,
    /// What the horizon outcome said.
    cut_off: CutOff,
    /// The mutex checker's overlap episodes on the cut history, run on its own.
    raw_violations: u64,
    /// The horizon the cut should have.
    expected: Nanos,
}

/// Cuts the complete file after every chunk, 4 bytes into the next frame (a torn write; after
/// the last chunk, the end line's), and analyses each cut.
fn every_cut(dir: &Path, late: Option<u64>) -> (Analysed, Vec<Cut>) {
    let clients = holds(late);
    let chunks = arrival(&clients);
    let full = dir.join(format!("full-{late:?}.jsonl.zst"));
    let lengths = write(&full, &chunks);
    let bytes = std::fs::read(&full).unwrap();
    let p = params(&clients);
    let complete = pass(&p, &full);
    let mut cuts = Vec::new();
    for (j, &len) in lengths.iter().enumerate() {
        let path = dir.join(format!("cut-{late:?}-{j}.jsonl.zst"));
        std::fs::write(&path, &bytes[..len as usize + 4]).unwrap();
        let analysed = pass(&p, &path);
        let outcome = analysed.outcomes.iter().find(|o| o.name == horizon::NAME);
        let outcome = outcome.expect("a cut-off history reports its horizon");
        assert_eq!(outcome.validity, Validity::Unknown);
        let note = outcome.note.as_deref().unwrap();
        assert!(note.starts_with("history cut off at "), "{note}");
        let in_file: Vec<Op> = chunks[..=j].concat();
        let expected = expected_horizon(&in_file);
        let cut_off = lockbench_analysis::figures::Reports::cut_off(analysed.outcomes.as_slice())
            .cloned()
            .expect("the horizon's figures");
        assert_eq!(cut_off.horizon_s, expected.as_duration().as_secs_f64());
        let after = in_file.iter().filter(|o| o.time >= expected).count();
        assert_eq!(cut_off.ops_not_judged, after as u64, "{note}");
        let history = History::read_file(&path, Some("b")).unwrap();
        assert!(history.is_cut_off());
        let raw_violations = mutex::check(&history).violations;
        cuts.push(Cut {
            analysed,
            cut_off,
            raw_violations,
            expected,
        });
    }
    (complete, cuts)
}

#[test]
fn no_cut_of_a_correct_history_shows_a_violation_and_each_reports_its_horizon() {
    let dir = tempfile::tempdir().unwrap();
    let (complete, cuts) = every_cut(dir.path(), None);
    assert!(!complete.outcomes.iter().any(|o| o.name == horizon::NAME));
    assert_eq!(
        Safety::from_outcomes(complete.outcomes).verdict,
        Validity::Valid
    );
    assert!(complete.stalls.is_empty(), "{:?}", complete.stalls);
    assert!(cuts.len() > 30, "{} cuts", cuts.len());
    // Without the horizon, the tail shows overlaps that never happened.
    let false_overlaps = cuts.iter().filter(|c| c.raw_violations > 0).count();
    assert!(
        false_overlaps > 0,
        "no cut misses a release: the test shows nothing"
    );
    for c in cuts {
        assert_eq!(mutex_violations(&c.analysed), 0, "{:?}", c.cut_off);
        let verdict = Safety::from_outcomes(c.analysed.outcomes).verdict;
        assert_eq!(verdict, Validity::Unknown, "cut off is never valid");
        // The measured window ends at the horizon: the missing tail is no stall.
        assert!(c.analysed.stalls.is_empty(), "{:?}", c.analysed.stalls);
    }
}

#[test]
fn a_real_overlap_before_the_horizon_is_still_found() {
    let dir = tempfile::tempdir().unwrap();
    let late = 60;
    let (complete, cuts) = every_cut(dir.path(), Some(late));
    assert_eq!(mutex_violations(&complete), 1);
    // The next client's grant, 10 ms after the late hold's, is the overlap.
    let overlap = Nanos(grant(late + 1));
    let judged: Vec<&Cut> = cuts.iter().filter(|c| c.expected > overlap).collect();
    assert!(judged.len() > 20, "{} cuts", judged.len());
    for c in &judged {
        assert_eq!(mutex_violations(&c.analysed), 1, "{:?}", c.cut_off);
        let verdict = Safety::from_outcomes(c.analysed.outcomes.clone()).verdict;
        assert_eq!(verdict, Validity::Invalid);
    }
    // Where the raw checker adds a false overlap in the tail, the pass still finds one.
    assert!(
        judged.iter().any(|c| c.raw_violations == 2),
        "no cut shows the false overlap beside the real one"
    );
}
