//! A static site of finished runs, publishable as it is (GitHub Pages, any web server, a
//! directory opened in a browser): `lockbench report --site DIR RUN_DIRS...`.
//!
//! Each run directory is copied under the site whole, as it is on disk (its report,
//! `results.json`, scenario, history and histograms, so every link of the report resolves):
//! `lockbench report --site` has rewritten each report with this version just before. The index lists every run, newest first, and links, for each scenario
//! that ran more than once, its newest run compared with the one before it (`lockbench
//! compare`'s page, with its default thresholds), and each verdict suite's page (a suite's
//! directory, parts and all, is copied the same way). Every page is self-contained: no script, no
//! font or style from elsewhere.

use crate::html::{Extra, write_index_with};
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What [`write_site`] wrote.
#[derive(Debug)]
pub struct Site {
    /// The site's front page.
    pub index: PathBuf,
    /// The runs copied.
    pub runs: usize,
    /// The comparison pages, one per scenario with two runs or more.
    pub comparisons: Vec<PathBuf>,
}

/// Writes the site of `run_dirs` into `out` (created if missing; pages of an earlier site
/// there are replaced). Each run goes in as it is: write its report first
/// ([`crate::html::write_report`]), or the index links its `results.json`.
pub fn write_site(out: &Path, run_dirs: &[PathBuf]) -> anyhow::Result<Site> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut by_name = BTreeMap::new();
    // Per scenario: (started, site directory name, results).
    let mut scenarios: BTreeMap<String, Vec<(String, String, lockbench_results::RunResults)>> =
        BTreeMap::new();
    let mut extras = Vec::new();
    for dir in run_dirs {
        let name = dir
            .canonicalize()
            .with_context(|| format!("cannot read {}", dir.display()))?
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .with_context(|| format!("{} names no run directory", dir.display()))?;
        if let Some(other) = by_name.insert(name.clone(), dir.clone()) {
            anyhow::bail!(
                "{} and {} have the same name ({name}): a site holds each run under its directory's name; rename one",
                other.display(),
                dir.display()
            );
        }
        copy_tree(dir, &out.join(&name))?;
        // A verdict suite: its page, linked from the index beside the runs.
        if dir.join(crate::decision::FILE).exists() {
            let decision = crate::decision::read(dir)?;
            extras.push(Extra {
                title: format!(
                    "verdict of {}: {}",
                    decision.started_at,
                    crate::decision::headline(&decision)
                ),
                href: format!("{name}/report.html"),
            });
            continue;
        }
        let results = lockbench_compare::load(dir)?;
        scenarios
            .entry(results.scenario.clone())
            .or_default()
            .push((results.started_at.clone(), name, results));
    }
    let mut comparisons = Vec::new();
    for (scenario, mut runs) in scenarios {
        if runs.len() < 2 {
            continue;
        }
        runs.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let [.., (_, base_name, base), (_, new_name, new)] = runs.as_slice() else {
            unreachable!("two runs at least");
        };
        let mut c = lockbench_compare::compare(base, new, &lockbench_compare::Config::default());
        c.base_label = base_name.clone();
        c.new_label = new_name.clone();
        let file = format!("compare-{}.html", file_safe(&scenario));
        let path = out.join(&file);
        std::fs::write(&path, lockbench_compare::render::html(&c))
            .with_context(|| format!("cannot write {}", path.display()))?;
        extras.push(Extra {
            title: format!(
                "{scenario}: {new_name} against {base_name} ({} regressed, {} improved)",
                c.regressions(),
                c.improvements()
            ),
            href: file,
        });
        comparisons.push(path);
    }
    let index = write_index_with(out, &extras)?;
    Ok(Site {
        index,
        runs: by_name.len(),
        comparisons,
    })
}

/// A scenario name as a file name: letters, digits, `-` and `_` kept, anything else `_`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Copies the directory `from` to `to`, files and subdirectories.
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in
        std::fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))?
    {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            copy_tree(&source, &target)?;
        } else {
            std::fs::copy(&source, &target).with_context(|| {
                format!("cannot copy {} to {}", source.display(), target.display())
            })?;
        }
    }
    Ok(())
}
