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
    check_names(&scenario).map_err(|e| format!("{source}: {e}"))?;
    scenario
        .knobs
        .fill(&knob_schemas())
        .and_then(|()| crate::expiry::check_renewals(&scenario))
        .map_err(|e| format!("{source}: {e}"))?;
    Ok(scenario)
}

/// Every recipe the scenario names (`backends`, `elections`, the `[expect]` table) is a
/// registered one: core reads any name, only the registry knows which exist.
fn check_names(scenario: &Scenario) -> Result<(), String> {
    for b in &scenario.backends {
        crate::parse_backend(b.name()).map_err(|e| format!("backends: {e}"))?;
    }
    for e in &scenario.elections {
        crate::parse_election(e.name()).map_err(|e| format!("elections: {e}"))?;
    }
    let known =
        |name: &str| crate::parse_backend(name).is_ok() || crate::parse_election(name).is_ok();
    let valid = crate::backend_names();
    scenario
        .expect
        .check_names(known, &valid)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    /// A misspelled recipe, in `backends` or in `[expect]`, is named with the valid ones.
    #[test]
    fn an_unknown_recipe_is_named_with_the_registered_ones() {
        let text = "name = \"t\"\nbackends = [\"zk-fast\"]\n[workload]\nclients = 2\nkeys = 1\n";
        let err = crate::load_scenario("t.toml", text, &[]).unwrap_err();
        assert!(
            err.contains("zk-fast") && err.contains("zk-fair") && err.contains("t.toml"),
            "{err}"
        );
        let text = text.replace("zk-fast", "zk-fair") + "[expect]\nsafe = [\"redlok\"]\n";
        let err = crate::load_scenario("t.toml", &text, &[]).unwrap_err();
        assert!(
            err.contains("expect.safe") && err.contains("redlok"),
            "{err}"
        );
        assert!(crate::load_scenario("t.toml", &text.replace("redlok", "redlock"), &[]).is_ok());
    }

    /// A misspelled or lock recipe in `elections` is named with the registered election
    /// recipes; `[expect]` accepts an election recipe's name.
    #[test]
    fn an_unknown_election_recipe_is_named_with_the_registered_ones() {
        let text = "name = \"f\"\nelections = [\"zk-election\"]\n[workload]\nkind = \"failover\"\n\
                    clients = 3\nkeys = 1\n";
        let s = crate::load_scenario("f.toml", text, &[]).unwrap();
        assert_eq!(s.elections, [crate::parse_election("zk-election").unwrap()]);
        let err = crate::load_scenario("f.toml", text, &["elections=zk-fair".into()]).unwrap_err();
        assert!(
            err.contains("elections")
                && err.contains("`zk-fair`")
                && err.contains("redis-lease-election")
                && err.contains("f.toml"),
            "{err}"
        );
        let expect = format!("{text}[expect]\nsafe = [\"zk-election\"]\n");
        assert!(crate::load_scenario("f.toml", &expect, &[]).is_ok());
    }
}
