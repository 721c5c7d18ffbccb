//! The built-in scenarios: TOML files in the repository's `scenarios/` folder, compiled in so
//! the binary works from anywhere.

/// `(name, TOML text)` of every built-in scenario.
pub const SCENARIOS: &[(&str, &str)] = &[
    ("quick", include_str!("../../../scenarios/quick.toml")),
    (
        "libraries",
        include_str!("../../../scenarios/libraries.toml"),
    ),
    (
        "contention",
        include_str!("../../../scenarios/contention.toml"),
    ),
    ("spread", include_str!("../../../scenarios/spread.toml")),
    (
        "uncontended",
        include_str!("../../../scenarios/uncontended.toml"),
    ),
    (
        "redis-throughput",
        include_str!("../../../scenarios/redis-throughput.toml"),
    ),
    (
        "broken-recipe",
        include_str!("../../../scenarios/broken-recipe.toml"),
    ),
    ("fencing", include_str!("../../../scenarios/fencing.toml")),
    ("watchdog", include_str!("../../../scenarios/watchdog.toml")),
    (
        "redlock-minority",
        include_str!("../../../scenarios/redlock-minority.toml"),
    ),
    (
        "redlock-clock",
        include_str!("../../../scenarios/redlock-clock.toml"),
    ),
    (
        "chaos-clock",
        include_str!("../../../scenarios/chaos-clock.toml"),
    ),
    (
        "chaos-disk",
        include_str!("../../../scenarios/chaos-disk.toml"),
    ),
    ("herd", include_str!("../../../scenarios/herd.toml")),
    ("nightly", include_str!("../../../scenarios/nightly.toml")),
    (
        "chaos-quick",
        include_str!("../../../scenarios/chaos-quick.toml"),
    ),
    (
        "chaos-loss",
        include_str!("../../../scenarios/chaos-loss.toml"),
    ),
    (
        "chaos-full",
        include_str!("../../../scenarios/chaos-full.toml"),
    ),
    (
        "redis-failover",
        include_str!("../../../scenarios/redis-failover.toml"),
    ),
    ("capacity", include_str!("../../../scenarios/capacity.toml")),
    ("failover", include_str!("../../../scenarios/failover.toml")),
    (
        "pg-failover",
        include_str!("../../../scenarios/pg-failover.toml"),
    ),
    ("soak", include_str!("../../../scenarios/soak.toml")),
    (
        "verdict-faults",
        include_str!("../../../scenarios/verdict-faults.toml"),
    ),
];

/// The TOML of the built-in scenario `name`.
pub fn find(name: &str) -> Option<&'static str> {
    SCENARIOS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Names of all built-ins, for error messages.
pub fn names() -> Vec<&'static str> {
    SCENARIOS.iter().map(|(n, _)| *n).collect()
}
