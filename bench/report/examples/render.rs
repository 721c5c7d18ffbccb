//! Re-renders run directories: `cargo run -p lockbench-report --example render -- RUN_DIR...`
//! writes each one's `report.html`, then the `index.html` of the first one's parent.

fn main() -> anyhow::Result<()> {
    let dirs: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    for d in &dirs {
        let t = std::time::Instant::now();
        let path = lockbench_report::html::write_report(d)?;
        eprintln!("{} ({:.2?})", path.display(), t.elapsed());
    }
    if let Some(parent) = dirs.first().and_then(|d| d.parent()) {
        eprintln!("{}", lockbench_report::html::write_index(parent)?.display());
    }
    Ok(())
}
