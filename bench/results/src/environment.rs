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
        cpu_model: std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| cpu_model(&text))
            .unwrap_or_default(),
        load_average: load_average_now(),
        load_average_end: None,
        servers,
    }
}

/// The first `model name` of a `/proc/cpuinfo`.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_string())
    })
}

/// The machine's load averages now (`/proc/loadavg`), where readable: the run records them at
/// its start and its end.
pub fn load_average_now() -> Option<[f64; 3]> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| load_average(&text))
}

/// The three load averages of a `/proc/loadavg` line (`0.52 0.58 0.59 1/467 12345`).
fn load_average(loadavg: &str) -> Option<[f64; 3]> {
    let mut fields = loadavg
        .split_ascii_whitespace()
        .map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_model_and_the_load_of_procs_formats() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) \
                       CPU @ 2.20GHz\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(
            cpu_model(cpuinfo).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(cpu_model("processor\t: 0\n"), None);
        assert_eq!(
            load_average("0.52 1.58 12.50 1/467 12345\n"),
            Some([0.52, 1.58, 12.5])
        );
        assert_eq!(load_average("garbage"), None);
    }

    #[test]
    fn this_machine_has_a_load_average() {
        let e = detect(Default::default());
        assert!(
            e.load_average.is_some_and(|l| l.iter().all(|x| *x >= 0.0)),
            "{e:?}"
        );
    }
}
