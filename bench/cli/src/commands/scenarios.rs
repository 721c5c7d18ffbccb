//! `lockbench scenarios`.

use std::process::ExitCode;

/// Prints each built-in scenario with its one-line description.
pub fn list() -> anyhow::Result<ExitCode> {
    for (name, text) in crate::builtin::SCENARIOS {
        let s = lockbench_registry::load_scenario(&format!("built-in scenario {name}"), text, &[])
            .map_err(anyhow::Error::msg)?;
        println!("{name:<18} {}", s.description);
    }
    println!(
        "{:<18} The suite: every backend at three shapes, under each fault, in failover, the \
         herd and the knee; one page that says which to pick (--budget, default 20m)",
        super::verdict::NAME
    );
    println!("\nRun one with `lockbench run <name>`; `lockbench run FILE.toml` runs your own.");
    Ok(ExitCode::SUCCESS)
}
