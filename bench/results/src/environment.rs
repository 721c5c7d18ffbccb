//! The environment block: facts about the machine read at run time.

use crate::model::Environment;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The version the running binary gave ([`set_version`]).
static VERSION: OnceLock<String> = OnceLock::new();

/// Records the running binary's version (with its commit: `0.1.0 (abc1234 2026-11-28)`) as
/// `lockbench_version`. Only the binary knows its commit: a build script in this crate would
/// rebuild every crate above it on every commit. Without it, the crate version.
pub fn set_version(version: &str) {
    let _ = VERSION.set(version.to_string());
}

/// Reads the kernel, OS and CPU count; `servers` comes from the servers themselves.
pub fn detect(servers: BTreeMap<String, String>) -> Environment {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let os = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| std::env::consts::OS.into());
    Environment {
        lockbench_version: VERSION
            .get()
            .cloned()
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").into()),
        kernel,
        os,
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        servers,
    }
}
