//! The files a run leaves behind, in `results/<UTC time>-<scenario>/`:
//!
//! - `scenario.toml`: the scenario exactly as run, every default filled in, seed included;
//! - `history.jsonl.zst`: every op of every backend, one JSON object per line with a `backend`
//!   field (times and tokens relative to the line before: `lockbench_core::history::compact`),
//!   as zstd frames appended while the run goes (`zstdcat history.jsonl.zst | head`;
//!   see `lockbench_core::history::file`). Lines are in arrival order (time order per client
//!   chunk; sort by `t` for a global order). An interrupted run keeps every frame written so
//!   far. Fault events are lines with `"type":"nemesis"` (verb, phase, targets, note, applied),
//!   on the same clock; with `observe_server`, who the servers said held each lock
//!   are lines with `"type":"server"`; a backend whose run finished normally has a
//!   `"type":"end"` line after its last op ([`Written::write_end`]), so a reader can tell a
//!   complete history from one cut off (`lockbench_core::history`);
//! - `histograms/<backend>.<metric>.hgrm`: HdrHistogram's percentile distribution text, as
//!   Java's `outputPercentileDistribution(out, 5, 1000.0)` prints it (values in ms; see `hgrm`);
//! - `histograms/<backend>.<metric>.hdr`: the same histogram, V2-deflate serialized, so
//!   histograms from several runs or processes can be merged exactly;
//! - `results.json`: the figures (see `SCHEMA.md`), rewritten after each backend so a cut-off
//!   run still has the backends that finished;
//! - `summary.csv` and `junit.xml`: the summary table and the expectations for CI systems
//!   ([`crate::summary_csv`], [`crate::junit`]), rewritten with `results.json`.

mod hgrm;

use anyhow::Context;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use lockbench_core::history::file::FrameWriter;
use lockbench_core::history::ordered::{Event, Lateness};
use lockbench_core::history::{self, NemesisLine, NemesisTag};
use lockbench_core::server_view::{ServerLine, ServerTag};
use lockbench_core::{FaultEvent, History, Op, ServerObservation};
use lockbench_results::model::RunResults;
use serde::Serialize;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What a backend's history writer wrote: where its frames start in the history file and how
/// far out of time order its ops arrived (see `lockbench_core::history::ordered`).
#[derive(Clone, Debug)]
pub struct Written {
    /// The history file.
    pub path: PathBuf,
    /// The byte offset of the backend's first frame.
    pub offset: u64,
    /// The ops' lateness in arrival (= file) order, and their count and latest time.
    pub lateness: Lateness,
}

impl Written {
    /// The backend's history read back into memory (for short histories: failover rounds).
    pub fn read_in_memory(
        &self,
        backend: &str,
        faults: Vec<FaultEvent>,
    ) -> anyhow::Result<History> {
        let mut ops = Vec::new();
        for e in lockbench_core::history::events(&self.path, self.offset, Some(backend))? {
            if let Event::Op(op) = e? {
                ops.push(op);
            }
        }
        Ok(History::with_faults(ops, faults))
    }

    /// Appends the backend's end line (`lockbench_core::history::End`), in a frame of its own
    /// after the writer's last: call it once the run finished normally and the writer is done,
    /// never after an error, so that a history without it reads as cut off.
    pub fn write_end(&self, backend: &str) -> anyhow::Result<()> {
        let end = lockbench_core::history::End {
            time: self.lateness.latest(),
            ops: self.lateness.ops,
        };
        history::file::append_frame(&self.path, &end.line(Some(backend)))
            .with_context(|| format!("cannot append to {}", self.path.display()))
    }
}

/// The task appending a backend's history to `history.jsonl.zst`; it yields what it wrote
/// once all senders are dropped.
pub type HistoryWriter = JoinHandle<anyhow::Result<Written>>;

/// A run's output directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// Creates `<parent>/<UTC time>-<scenario>/` (or uses `exact` when given), failing if it
    /// already holds results so nothing is overwritten.
    pub fn create(parent: &Path, scenario: &str, exact: Option<&Path>) -> anyhow::Result<RunDir> {
        let path = match exact {
            Some(p) => p.to_path_buf(),
            None => {
                let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
                    .to_string()
                    .replace(':', "")
                    .trim_end_matches('Z')
                    .to_string();
                parent.join(format!("{stamp}-{scenario}"))
            }
        };
        if path.join("results.json").exists() {
            anyhow::bail!(
                "{} already holds results; choose another --out directory",
                path.display()
            );
        }
        fs::create_dir_all(path.join("histograms"))
            .with_context(|| format!("cannot create results directory {}", path.display()))?;
        Ok(RunDir { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `scenario.toml`.
    pub fn write_scenario(&self, toml: &str) -> anyhow::Result<()> {
        write_atomic(&self.path.join("scenario.toml"), toml.as_bytes())
    }

    /// Writes (replaces) `results.json`, `summary.csv` and `junit.xml`.
    pub fn write_results(&self, results: &RunResults) -> anyhow::Result<()> {
        let mut json = serde_json::to_vec_pretty(results)?;
        json.push(b'\n');
        write_atomic(&self.path.join("results.json"), &json)?;
        write_for_ci(&self.path, results)
    }

    /// Writes a histogram as `.hgrm` text and `.hdr` (V2 deflate) under `histograms/`.
    pub fn write_histogram(
        &self,
        backend: &str,
        metric: &str,
        h: &Histogram<u64>,
    ) -> anyhow::Result<()> {
        let dir = self.path.join("histograms");
        let mut bin = Vec::new();
        V2DeflateSerializer::new()
            .serialize(h, &mut bin)
            .map_err(|e| anyhow::anyhow!("serialize histogram: {e:?}"))?;
        let stem = histogram_stem(backend);
        write_atomic(&dir.join(format!("{stem}.{metric}.hdr")), &bin)?;
        write_atomic(
            &dir.join(format!("{stem}.{metric}.hgrm")),
            hgrm::hgrm(h).as_bytes(),
        )
    }

    /// The history file.
    pub fn history_path(&self) -> PathBuf {
        self.path.join(history::file::FILE_NAME)
    }

    /// Starts the history writer for `backend`: returns the sender the client loop records
    /// into and a task that appends every chunk to `history.jsonl.zst` as it arrives (a frame
    /// closed at least every second, so an interrupted run keeps it) and, when all senders are
    /// gone, says where the backend's frames start and how late its ops arrived. It keeps no
    /// ops: a run's memory does not grow with its history.
    pub fn history_writer(
        &self,
        backend: &'static str,
    ) -> anyhow::Result<(mpsc::UnboundedSender<Vec<Op>>, HistoryWriter)> {
        let path = self.history_path();
        let mut out = FrameWriter::append(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let offset = out.len();
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<Op>>();
        let runtime = tokio::runtime::Handle::current();
        let task = tokio::task::spawn_blocking(move || {
            let mut lateness = Lateness::default();
            loop {
                // Wake at least once per frame interval, so a quiet stretch (every client
                // stuck in a partition) still closes the frame in progress.
                let next = runtime.block_on(tokio::time::timeout(
                    history::file::FRAME_EVERY / 2,
                    rx.recv(),
                ));
                match next {
                    Ok(Some(chunk)) => {
                        for op in &chunk {
                            out.push_op(op, Some(backend));
                            lateness.observe(op.time);
                        }
                    }
                    Ok(None) => break,
                    Err(_elapsed) => {}
                }
                out.maybe_flush()?;
            }
            out.flush()?;
            Ok(Written {
                path,
                offset,
                lateness,
            })
        });
        Ok((tx, task))
    }
}

/// One nemesis line: a fault event tagged with its backend.
#[derive(Serialize)]
struct FaultLine<'a> {
    backend: &'a str,
    #[serde(flatten)]
    line: NemesisLine<&'a FaultEvent>,
}

/// One server line: a server-side observation tagged with its backend.
#[derive(Serialize)]
struct ServerLineOf<'a> {
    backend: &'a str,
    #[serde(flatten)]
    line: ServerLine<&'a ServerObservation>,
}

impl RunDir {
    /// Appends server-side observations to the history (`"type":"server"` lines) in one
    /// frame, so they never interleave with the op writer's frames.
    pub fn append_server(
        &self,
        backend: &str,
        observations: &[ServerObservation],
    ) -> anyhow::Result<()> {
        if observations.is_empty() {
            return Ok(());
        }
        let mut lines = Vec::with_capacity(observations.len() * 64);
        for observation in observations {
            serde_json::to_writer(
                &mut lines,
                &ServerLineOf {
                    backend,
                    line: ServerLine {
                        kind: ServerTag::Server,
                        observation,
                    },
                },
            )?;
            lines.push(b'\n');
        }
        let path = self.history_path();
        history::file::append_frame(&path, &lines)
            .with_context(|| format!("cannot append to {}", path.display()))
    }

    /// Appends one fault event to the history at once (a `"type":"nemesis"` line in a frame
    /// of its own), so an interrupted run keeps its fault windows too.
    pub fn append_fault(&self, backend: &str, event: &FaultEvent) -> anyhow::Result<()> {
        let path = self.history_path();
        let mut line = serde_json::to_vec(&FaultLine {
            backend,
            line: NemesisLine {
                kind: NemesisTag::Nemesis,
                event,
            },
        })?;
        line.push(b'\n');
        // One frame in one write(2) on an O_APPEND file: never interleaves with the op
        // writer's frames.
        history::file::append_frame(&path, &line)
            .with_context(|| format!("cannot append to {}", path.display()))
    }
}

/// The summary table as CSV.
pub const SUMMARY_CSV: &str = "summary.csv";
/// The expectations as JUnit XML.
pub const JUNIT_XML: &str = "junit.xml";

/// Writes (replaces) `dir`'s `summary.csv` and `junit.xml` from `results` (also for runs
/// written before these files existed: `lockbench report`).
pub fn write_for_ci(dir: &Path, results: &RunResults) -> anyhow::Result<()> {
    write_atomic(
        &dir.join(SUMMARY_CSV),
        crate::summary_csv::render(results)?.as_bytes(),
    )?;
    write_atomic(
        &dir.join(JUNIT_XML),
        crate::junit::render(results)?.as_bytes(),
    )
}

pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The name `backend`'s histogram files start with under `histograms/`: the backend's name,
/// with every `/` as `_`, since a user's adapter is named by its manifest's path
/// (`/home/me/adapter.toml`), which joined as it is would put the files outside the run
/// directory, next to the manifest.
pub fn histogram_stem(backend: &str) -> String {
    backend.replace('/', "_")
}

#[cfg(test)]
mod histogram_file_tests {
    use super::*;

    #[test]
    fn a_backend_named_by_a_path_keeps_its_histograms_in_the_run_directory() {
        let parent = std::env::temp_dir().join(format!("lb-histnames-{}", std::process::id()));
        let run = RunDir::create(&parent, "t", Some(&parent.join("run"))).unwrap();
        let manifest = parent.join("user").join("adapter.toml");
        let h = Histogram::<u64>::new(3).unwrap();
        run.write_histogram(manifest.to_str().unwrap(), "acquire", &h)
            .unwrap();
        let written: Vec<String> = fs::read_dir(run.path().join("histograms"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(written.len(), 2, "{written:?}");
        assert!(
            !parent.join("user").exists(),
            "written next to the manifest"
        );
        let stem = histogram_stem(manifest.to_str().unwrap());
        assert!(
            written.contains(&format!("{stem}.acquire.hdr")),
            "{written:?}"
        );
        assert_eq!(histogram_stem("lib:curator"), "lib:curator");
        let _ = fs::remove_dir_all(&parent);
    }
}
