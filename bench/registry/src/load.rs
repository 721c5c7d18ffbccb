//! Loading a scenario for a run: core's parse, overrides and checks, then every registered
//! system's knob tables filled with their defaults and validated (core knows no system's
//! knobs; see `lockbench_core::knobs`). Every runtime path loads through here, so a saved
//! `scenario.toml` has every default written out, as before.

use lockbench_core::Scenario;
use lockbench_core::knobs::KnobSchema;

/// Every registered system's knob tables ([`System::knobs`](lockbench_core::System::knobs)),
/// in the order a saved scenario lists them (the systems' order).
pub fn knob_schemas() -> Vec<KnobSchema> {
    let tables = crate::SYSTEMS.iter().flat_map(|s| s.knobs());
    tables.copied().collect()
}

/// Parses TOML text, applies `--set path=value` overrides, fills defaults (every system's
/// knobs too) and validates. `source` names the text in errors.
pub fn load_scenario(source: &str, text: &str, overrides: &[String]) -> Result<Scenario, String> {
    let mut scenario = Scenario::load(source, text, overrides)?;
    scenario
        .knobs
        .fill(&knob_schemas())
        .and_then(|()| crate::expiry::check_renewals(&scenario))
        .map_err(|e| format!("{source}: {e}"))?;
    Ok(scenario)
}
