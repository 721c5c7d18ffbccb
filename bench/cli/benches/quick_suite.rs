//! `cargo bench --bench quick_suite` (`harness = false`, not criterion): runs the `quick`
//! scenario end to end with the lockbench binary this package builds, against the
//! docker-compose cluster when its containers run, else the managed cluster (the binary starts
//! and stops it if needed; `LOCKBENCH_CLUSTER=managed|compose` overrides), and leaves a new `results/<time>-quick/` with `results.json` and
//! the HTML report (`report.html`; `results/index.html` lists it). It prints the comparison
//! table and the report's path.
//! Criterion's flags (`--warm-up-time`, ...) are ignored; `cargo bench -- --list` lists it.

use std::path::Path;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("quick_suite: bench");
        return ExitCode::SUCCESS;
    }
    // `cargo bench NAME`: run only when the filter matches this target's one bench.
    if let Some(filter) = args
        .iter()
        .find(|a| !a.starts_with('-') && !is_flag_value(&args, a))
        && !"quick_suite".contains(filter.as_str())
    {
        return ExitCode::SUCCESS;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cluster = match lockbench_compose::bench_cluster() {
        Ok((cluster, why)) => {
            println!("quick_suite: the {cluster} cluster ({why})");
            cluster
        }
        Err(e) => {
            eprintln!("quick_suite: {e}");
            return ExitCode::FAILURE;
        }
    };
    let status = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .current_dir(&root)
        .args(["run", "quick", "--quiet", "--cluster", cluster])
        .status();
    match status {
        Ok(s) if s.success() => {
            println!(
                "quick_suite: report written (see `report:` above; results/index.html lists it)"
            );
            ExitCode::SUCCESS
        }
        Ok(s) => {
            eprintln!("quick_suite: lockbench run quick exited with {s}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("quick_suite: cannot run lockbench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `true` when `a` is the value of a criterion flag that takes one (`--warm-up-time 1`).
fn is_flag_value(args: &[String], a: &String) -> bool {
    const WITH_VALUE: &[&str] = &[
        "--warm-up-time",
        "--measurement-time",
        "--sample-size",
        "--save-baseline",
        "--baseline",
        "--load-baseline",
        "--noise-threshold",
        "--significance-level",
        "--confidence-level",
        "--nresamples",
        "--profile-time",
        "--output-format",
        "--color",
        "--plotting-backend",
    ];
    args.iter()
        .position(|x| std::ptr::eq(x, a))
        .is_some_and(|i| i > 0 && WITH_VALUE.contains(&args[i - 1].as_str()))
}
