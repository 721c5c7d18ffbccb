//! The files a run leaves behind, in `results/<UTC time>-<scenario>/`:
//!
//! - `scenario.toml`: the scenario exactly as run, every default filled in, seed included;
//! - `history.jsonl`: every op of every backend, one JSON object per line with a `backend`
//!   field, appended while the run goes (lines are in time order per client; sort by `t` for a
//!   global order). An interrupted run keeps every line written so far. Fault events are lines
//!   with `"type":"nemesis"` (verb, phase, targets, note, applied), on the same clock; with
//!   `observe_server`, who the servers said held each lock are lines with `"type":"server"`;
//! - `histograms/<backend>.<metric>.hgrm`: HdrHistogram's percentile distribution text, as
//!   Java's `outputPercentileDistribution(out, 5, 1000.0)` prints it (values in ms; see `hgrm`);
//! - `histograms/<backend>.<metric>.hdr`: the same histogram, V2-deflate serialized, so
//!   histograms from several runs or processes can be merged exactly;
//! - `results.json`: the figures (see `SCHEMA.md`), rewritten after each backend so a cut-off
//!   run still has the backends that finished.

mod hgrm;

use anyhow::Context;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use lockbench_core::history::{NemesisLine, NemesisTag};
use lockbench_core::server_view::{ServerLine, ServerTag};
use lockbench_core::{FaultEvent, Op, ServerObservation};
use lockbench_results::model::RunResults;
use serde::Serialize;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The task appending a backend's history to `history.jsonl`; it yields every op it wrote
/// once all senders are dropped.
pub type HistoryWriter = JoinHandle<anyhow::Result<Vec<Op>>>;

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

    /// Writes (replaces) `results.json`.
    pub fn write_results(&self, results: &RunResults) -> anyhow::Result<()> {
        let mut json = serde_json::to_vec_pretty(results)?;
        json.push(b'\n');
        write_atomic(&self.path.join("results.json"), &json)
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
        write_atomic(&dir.join(format!("{backend}.{metric}.hdr")), &bin)?;
        write_atomic(
            &dir.join(format!("{backend}.{metric}.hgrm")),
            hgrm::hgrm(h).as_bytes(),
        )
    }

    /// Starts the history writer for `backend`: returns the sender the client loop records
    /// into and a task that appends every chunk to `history.jsonl` as it arrives and, when all
    /// senders are gone, returns every op it wrote.
    pub fn history_writer(
        &self,
        backend: &'static str,
    ) -> anyhow::Result<(mpsc::UnboundedSender<Vec<Op>>, HistoryWriter)> {
        let path = self.path.join("history.jsonl");
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<Op>>();
        let task = tokio::task::spawn_blocking(move || {
            let mut out = file;
            let mut buf = Vec::with_capacity(1 << 16);
            let mut all = Vec::new();
            while let Some(chunk) = rx.blocking_recv() {
                buf.clear();
                for op in &chunk {
                    op.write_json_line(Some(backend), &mut buf);
                }
                // One write per chunk: the file is current after every chunk.
                out.write_all(&buf)?;
                all.extend_from_slice(&chunk);
            }
            Ok(all)
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
    /// Appends server-side observations to `history.jsonl` (`"type":"server"` lines) in one
    /// write, so they never interleave with the op writer's lines.
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
        self.append(&lines)
    }

    fn append(&self, bytes: &[u8]) -> anyhow::Result<()> {
        let path = self.path.join("history.jsonl");
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(bytes))
            .with_context(|| format!("cannot append to {}", path.display()))
    }

    /// Appends one fault event to `history.jsonl` at once (a `"type":"nemesis"` line), so an
    /// interrupted run keeps its fault windows too.
    pub fn append_fault(&self, backend: &str, event: &FaultEvent) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(&FaultLine {
            backend,
            line: NemesisLine {
                kind: NemesisTag::Nemesis,
                event,
            },
        })?;
        line.push(b'\n');
        // One write(2) on an O_APPEND file: never interleaves with the op writer's lines.
        self.append(&line)
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
