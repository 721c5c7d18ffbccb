//! What `lockbench --version` says and results.json records: the crate version and the commit
//! it was built from (`0.1.0 (abc1234 2026-11-28)`; see build.rs), so a result can be traced
//! to its code.

/// `0.1.0 (abc1234 2026-11-28)`, or `0.1.0 (unknown commit)` outside a git checkout.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("LOCKBENCH_COMMIT"),
    ")"
);
