//! The streaming analysis (the history file read back, reordered within the measured lateness
//! window, fed op by op) must give exactly what the in-memory one gives (the whole history
//! loaded and sorted): every checker's verdict and figures, hand-offs, fault windows, stalls,
//! the shared-lock figures.
//!
//! Histories: real ones recorded by `lockbench run` (the deliberately broken redis-broken-nonx
//! recipe from the `broken-recipe` scenario; redis-setnx and zk-fair under `chaos-quick`'s
//! pauses, partition and link delay, with a paused fencing holder), stored as they were
//! written (arrival order, zstd frames) under `tests/histories/`; and hand-written ones whose
//! chunks arrive out of order on purpose, with overlaps, stale writes, reused tokens, shared
//! grants and an unclosed fault window. The stored histories predate end lines, so they are
//! judged up to their horizon (`lockbench_analysis::horizon`); the hand-written ones are
//! written with and without an end line.

use crate::workload;
use lockbench_analysis::horizon;
use lockbench_analysis::pass::{Analysed, Params, Pass};
use lockbench_core::history::file::{FrameWriter, append_frame};
use lockbench_core::history::{self, End, NemesisLine, NemesisTag};
use lockbench_core::scenario::Workload;
use lockbench_core::{
    ClientId, ErrorKind, FaultEvent, FaultKind, FaultPhase, FencingToken, History, KeyId, Nanos,
    Op, OpF, OpType,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn params(workload: Workload, history: &History) -> Params {
    let first = history.ops().first().map(|o| o.time).unwrap_or_default();
    let last = history.ops().last().map(|o| o.time).unwrap_or_default();
    Params {
        workload,
        // A measured window inside the history, so hand-offs and stalls are cut by it.
        measure_start: Nanos(first.0 + (last.0 - first.0) / 10),
        measure_end: Nanos(last.0 - (last.0 - first.0) / 10),
        stall_alarm: Duration::from_millis(50),
    }
}

/// Asserts the two paths agree on everything, and returns the streamed result.
fn same(path: &Path, backend: Option<&str>, workload: Workload) -> Analysed {
    let in_memory_history = History::read_file(path, backend).unwrap();
    assert!(!in_memory_history.is_empty(), "{}: no ops", path.display());
    let p = params(workload, &in_memory_history);
    let memory = Pass::run_in_memory(&p, &in_memory_history);
    let streamed = Pass::run_file(&p, path, 0, backend).unwrap();
    assert_eq!(
        streamed.outcomes, memory.outcomes,
        "{backend:?}: checker outcomes"
    );
    for (s, m) in streamed.outcomes.iter().zip(&memory.outcomes) {
        assert_eq!(s.findings, m.findings, "{}: findings", s.name);
    }
    assert_eq!(streamed.handoffs, memory.handoffs, "{backend:?}: hand-offs");
    assert_eq!(streamed.handoffs.len(), memory.handoffs.len());
    assert_eq!(
        streamed.windows, memory.windows,
        "{backend:?}: fault windows"
    );
    assert_eq!(streamed.stalls, memory.stalls, "{backend:?}: stalls");
    assert_eq!(streamed.shared_lock, memory.shared_lock);
    assert_eq!(
        (streamed.releases, streamed.ops),
        (memory.releases, memory.ops)
    );
    assert_eq!(streamed.ops as usize, in_memory_history.len());
    streamed
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/histories")
        .join(name)
}

fn verdict(a: &Analysed) -> lockbench_analysis::Validity {
    a.outcomes.iter().map(|o| o.validity).max().unwrap()
}

#[test]
fn the_broken_recipe_is_found_invalid_the_same_way_streamed_and_in_memory() {
    let a = same(
        &fixture("redis-broken-nonx.jsonl.zst"),
        Some("redis-broken-nonx"),
        workload(8, 0.0),
    );
    assert_eq!(verdict(&a), lockbench_analysis::Validity::Invalid);
    let mutex = lockbench_analysis::figures::Reports::mutex(a.outcomes.as_slice()).unwrap();
    assert!(mutex.violations > 10, "{mutex:?}");
    assert!(a.releases > 100, "{}", a.releases);
}

#[test]
fn a_faulted_run_gives_the_same_windows_and_verdicts_streamed_and_in_memory() {
    let path = fixture("chaos-quick.jsonl.zst");
    for backend in ["redis-setnx", "zk-fair"] {
        let a = same(&path, Some(backend), workload(3, 0.0));
        assert!(a.windows.len() >= 3, "{backend}: {:?}", a.windows);
        assert!(a.windows.iter().any(|w| w.during.attempts > 0));
    }
}

/// Client `c`'s ops: acquire, maybe a write, release, every `period` ns from `t0`; some grants
/// overlap others' (the recipe is "broken"), some tokens repeat.
fn client_ops(c: u32, t0: u64, period: u64, n: u64, shared: bool) -> Vec<Op> {
    let (client, key) = (ClientId(c), KeyId(c % 2));
    let mut out = Vec::new();
    for i in 0..n {
        let t = t0 + i * period;
        let f = if shared && i % 3 == 0 {
            OpF::AcquireShared
        } else {
            OpF::Acquire
        };
        out.push(Op::invoke(Nanos(t), client, f, key));
        let token = Some(FencingToken(i * 2 + u64::from(c.is_multiple_of(3))));
        let ty = if i % 7 == 3 { OpType::Info } else { OpType::Ok };
        let error = (ty == OpType::Info).then_some(ErrorKind::Timeout);
        out.push(Op::complete(
            Nanos(t + 40),
            client,
            f,
            key,
            ty,
            token,
            error,
        ));
        if ty == OpType::Ok {
            let mut w = Op::complete(
                Nanos(t + 50),
                client,
                OpF::Write,
                key,
                if i % 5 == 0 { OpType::Fail } else { OpType::Ok },
                token,
                None,
            );
            w.stale = Some(i % 4 == 0);
            out.push(w);
            out.push(Op::invoke(Nanos(t + 60), client, OpF::Release, key));
            let lost = i % 11 == 0;
            out.push(Op::complete(
                Nanos(t + 70),
                client,
                OpF::Release,
                key,
                if lost { OpType::Fail } else { OpType::Ok },
                None,
                lost.then_some(ErrorKind::LockLost),
            ));
        }
    }
    out
}

fn fault(t: u64, fault: FaultKind, phase: FaultPhase, target: &str) -> FaultEvent {
    FaultEvent {
        time: Nanos(t),
        fault,
        phase,
        targets: vec![target.into()],
        note: String::new(),
        applied: true,
    }
}

/// Writes the clients' ops as a recorder would ship them: in chunks of `chunk` ops, one
/// client's chunk after another's, so the file is far from time order; fault events as frames
/// of their own in between; then, when `end`, the end line a finished run writes.
fn write_arrival_order(
    path: &Path,
    clients: &[Vec<Op>],
    chunk: usize,
    faults: &[FaultEvent],
    end: bool,
) {
    let mut w = FrameWriter::append(path).unwrap();
    let mut cursors = vec![0usize; clients.len()];
    let mut round = 0usize;
    let mut pending_faults = faults.iter();
    while cursors.iter().zip(clients).any(|(c, ops)| *c < ops.len()) {
        // Rotate which client ships first, and let client 0 lag three chunks behind.
        for k in 0..clients.len() {
            let i = (k + round) % clients.len();
            if i == 0 && round % 4 != 3 {
                continue;
            }
            let take = if i == 0 { chunk * 4 } else { chunk };
            let end = (cursors[i] + take).min(clients[i].len());
            for op in &clients[i][cursors[i]..end] {
                w.push_op(op, Some("hand"));
            }
            cursors[i] = end;
        }
        w.flush().unwrap();
        if let Some(f) = pending_faults.next() {
            let line = serde_json::to_string(&NemesisLine {
                kind: NemesisTag::Nemesis,
                event: f,
            })
            .unwrap();
            append_frame(path, format!("{line}\n").as_bytes()).unwrap();
        }
        round += 1;
    }
    drop(w);
    for f in pending_faults {
        let line = serde_json::to_string(&NemesisLine {
            kind: NemesisTag::Nemesis,
            event: f,
        })
        .unwrap();
        append_frame(path, format!("{line}\n").as_bytes()).unwrap();
    }
    if end {
        let ops = clients.iter().map(|c| c.len() as u64).sum();
        let time = clients.iter().flatten().map(|o| o.time).max().unwrap();
        append_frame(path, &End { time, ops }.line(Some("hand"))).unwrap();
    }
}

#[test]
fn hand_written_histories_arriving_out_of_order_agree() {
    let dir = tempfile::tempdir().unwrap();
    let faults = vec![
        fault(2_000, FaultKind::Pause, FaultPhase::Start, "client1"),
        fault(9_000, FaultKind::Partition, FaultPhase::Start, "redis"),
        fault(6_000, FaultKind::Pause, FaultPhase::Stop, "client1"),
        fault(14_000, FaultKind::Partition, FaultPhase::Stop, "redis"),
        fault(30_000, FaultKind::Kill, FaultPhase::Start, "redis"), // never stopped
    ];
    let runs = [
        (false, 3, true),
        (true, 5, false),
        (false, 1, false),
        (true, 2, true),
    ];
    for (i, (shared, chunk, end)) in runs.into_iter().enumerate() {
        let path = dir.path().join(format!("h{i}.jsonl.zst"));
        let clients: Vec<Vec<Op>> = (0..4)
            .map(|c| client_ops(c, u64::from(c) * 37, 100 + u64::from(c) * 13, 400, shared))
            .collect();
        write_arrival_order(&path, &clients, chunk, &faults, end);
        let scan = history::scan(&path, 0, Some("hand")).unwrap();
        assert!(scan.lateness.max > 1_000, "the file must be out of order");
        let a = same(
            &path,
            Some("hand"),
            workload(4, if shared { 0.3 } else { 0.0 }),
        );
        assert_eq!(verdict(&a), lockbench_analysis::Validity::Invalid);
        let cut = a.outcomes.iter().any(|o| o.name == horizon::NAME);
        assert_eq!(cut, !end, "a horizon exactly when there is no end line");
        assert_eq!(a.windows.len(), 3);
        assert_eq!(a.shared_lock.is_some(), shared);
        // Too small a window is an error, never a silent misorder.
        let too_small = history::ordered_ops(&path, 0, Some("hand"), scan.lateness.max / 2)
            .unwrap()
            .find(|r| r.is_err());
        assert!(too_small.is_some());
    }
}
