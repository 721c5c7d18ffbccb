//! Reading a run directory: `results.json` (typed, and raw for the fields this renderer has no
//! special view of), `scenario.toml` (verbatim, plus the warm-up and duration that place the
//! measured window), the history (`history.jsonl.zst`, or a legacy `history.jsonl`) and `histograms/<backend>.<metric>.hdr`.

use super::trace::Traces;
use anyhow::Context;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use lockbench_core::history;
use lockbench_results::model::{BackendResult, RunResults};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

/// Everything the report draws, read from disk.
pub(crate) struct Run {
    pub results: RunResults,
    /// `results.json` as plain JSON, for fields without a dedicated view.
    pub raw: serde_json::Value,
    /// `scenario.toml` verbatim, when present.
    pub scenario_toml: Option<String>,
    /// Warm-up before the measured window, ns (from `scenario.toml`, else 0).
    pub warmup_ns: u64,
    /// The measured window's length, ns, when the scenario has one.
    pub duration_ns: Option<u64>,
    /// Histograms by (backend, metric), metric = `acquire` | `handoff` | `acquire-service`.
    pub histograms: BTreeMap<(String, String), Histogram<u64>>,
    pub traces: Traces,
    /// Raw files worth linking, relative to `dir`.
    pub files: Vec<String>,
}

impl Run {
    /// Reads `dir`. Only `results.json` is required; a missing history or histogram means the
    /// charts that need it say so.
    pub fn read(dir: &Path) -> anyhow::Result<Run> {
        let results_path = dir.join("results.json");
        let text = std::fs::read_to_string(&results_path)
            .with_context(|| format!("cannot read {}", results_path.display()))?;
        let raw: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", results_path.display()))?;
        let results: RunResults = serde_json::from_value(raw.clone())
            .with_context(|| format!("{} does not match the schema", results_path.display()))?;

        let scenario_toml = std::fs::read_to_string(dir.join("scenario.toml")).ok();
        let scenario: Option<toml::Table> = scenario_toml.as_deref().and_then(|t| t.parse().ok());
        let duration_of = |name: &str| {
            scenario
                .as_ref()
                .and_then(|s| s.get(name))
                .and_then(|v| v.as_str())
                .and_then(|s| humantime::parse_duration(s).ok())
                .map(|d| d.as_nanos() as u64)
        };

        let history = history::file::path_in(dir);
        let moments: Vec<super::trace::Moment> = results
            .results
            .iter()
            .flat_map(|r| {
                r.safety
                    .first_violations
                    .iter()
                    .map(|v| (r.backend.clone(), v.kind.name().to_string(), v.at_ns))
            })
            .collect();
        let traces = match history::file::open(&history, 0) {
            Ok(r) => Traces::read_with(r, &moments),
            Err(_) => Traces::default(),
        };

        let mut histograms = BTreeMap::new();
        let mut hist_files = Vec::new();
        if let Ok(entries) = std::fs::read_dir(dir.join("histograms")) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                hist_files.push(format!("histograms/{name}"));
                let Some(stem) = name.strip_suffix(".hdr") else {
                    continue;
                };
                let Some((backend, metric)) = stem.rsplit_once('.') else {
                    continue;
                };
                if let Some(h) = read_hdr(&e.path()) {
                    histograms.insert((backend.to_string(), metric.to_string()), h);
                }
            }
        }
        hist_files.sort();
        let history_name = history::file::path_in(dir)
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let mut files: Vec<String> = ["results.json", "scenario.toml", &history_name]
            .into_iter()
            .filter(|f| dir.join(f).exists())
            .map(str::to_string)
            .collect();
        files.extend(hist_files);

        Ok(Run {
            results,
            raw,
            scenario_toml,
            warmup_ns: duration_of("warmup").unwrap_or(0),
            duration_ns: duration_of("duration").filter(|d| *d > 0),
            histograms,
            traces,
            files,
        })
    }

    /// The results that have the part `part` picks, each with that part, in the run's order.
    pub fn results_with<'a, T>(
        &'a self,
        part: impl Fn(&'a BackendResult) -> Option<&'a T>,
    ) -> Vec<(&'a BackendResult, &'a T)> {
        self.results
            .results
            .iter()
            .filter_map(|r| Some((r, part(r)?)))
            .collect()
    }

    /// The histogram of `backend`'s `metric`, if one was written and is not empty.
    pub fn histogram(&self, backend: &str, metric: &str) -> Option<&Histogram<u64>> {
        self.histograms
            .get(&(crate::run_dir::histogram_stem(backend), metric.to_string()))
            .filter(|h| !h.is_empty())
    }

    /// The measured window of a backend's trace, ns on its clock: the clock starts shortly
    /// before the first op, so the window is placed `warmup` after the first op (approximate
    /// by the client connect time, which is not in the history).
    pub fn measured_window(&self, first_t: u64, last_t: u64) -> (u64, u64) {
        let start = (first_t + self.warmup_ns).min(last_t);
        let end = match self.duration_ns {
            Some(d) => (start + d).min(last_t),
            None => last_t,
        };
        (start, end.max(start))
    }
}

fn read_hdr(path: &Path) -> Option<Histogram<u64>> {
    let f = File::open(path).ok()?;
    Deserializer::new().deserialize(&mut BufReader::new(f)).ok()
}
