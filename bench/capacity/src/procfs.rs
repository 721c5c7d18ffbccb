//! The few `/proc` readings the sampler needs: CPU ticks and resident memory of a process and
//! of its threads, the descendants of a process (optionally without some subtrees), and the
//! machine's CPU counters. Every reader
//! returns `None` for a process that is gone, never an error: processes come and go.

use std::collections::BTreeMap;
use std::path::Path;

/// Clock ticks per second of `/proc` CPU times (`USER_HZ`), asked of the system once
/// (`sysconf(_SC_CLK_TCK)`); 100, Linux's value on every architecture today, only when the
/// system cannot say.
pub fn ticks_per_s() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .filter(|&t| t > 0)
            .map_or(100.0, |t| t as f64)
    })
}

/// `(utime + stime, ppid)` of `/proc/<path>/stat`.
fn stat_fields(path: &Path) -> Option<(u64, u32)> {
    let text = std::fs::read_to_string(path).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: split after it.
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    // rest starts at field 3 (state): ppid is field 4, utime 14, stime 15.
    let ppid = f.get(1)?.parse().ok()?;
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((utime + stime, ppid))
}

/// CPU ticks (user + system) a process has used so far, its threads included.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    stat_fields(&Path::new("/proc").join(pid.to_string()).join("stat")).map(|(t, _)| t)
}

/// Resident memory, KiB (`VmRSS`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_ascii_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// CPU ticks of each thread of `pid`, by thread id.
pub fn thread_ticks(pid: u32) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for e in dir.flatten() {
        let Some(tid) = e.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        if let Some((t, _)) = stat_fields(&e.path().join("stat")) {
            out.insert(tid, t);
        }
    }
    out
}

/// `pid` and every process below it (children, their children, ...).
pub fn tree(pid: u32) -> Vec<u32> {
    tree_pruned(pid, &[])
}

/// `pid` and every process below it, except the processes in `prune` and everything below
/// them: lockbench's own process tree without the servers it started (a run that brings up the
/// managed cluster is the servers' parent).
pub fn tree_pruned(pid: u32, prune: &[u32]) -> Vec<u32> {
    below(&parents(), pid, prune)
}

/// `(pid, ppid)` of every process now: one pass over `/proc`, for [`below`].
pub fn parents() -> Vec<(u32, u32)> {
    let mut parent_of = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some((_, ppid)) = stat_fields(&e.path().join("stat")) {
                parent_of.push((p, ppid));
            }
        }
    }
    parent_of
}

/// `pid` and every process below it in `parent_of` ([`parents`]), except the processes in
/// `prune` and everything below them.
pub fn below(parent_of: &[(u32, u32)], pid: u32, prune: &[u32]) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(
            parent_of
                .iter()
                .filter(|&&(p, pp)| pp == parent && !prune.contains(&p))
                .map(|&(p, _)| p),
        );
        i += 1;
    }
    out
}

/// `(busy, total)` ticks of the whole machine from `/proc/stat` (busy = all but idle and
/// iowait).
pub fn machine_ticks() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_ascii_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tick_rate_is_the_systems() {
        // Linux reports USER_HZ = 100 on x86_64 and aarch64; a wrong reading (0, a negative
        // number, the kernel's HZ of 250 or 1000) would scale every CPU figure.
        assert_eq!(ticks_per_s(), 100.0);
    }

    use super::*;

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        // Burn CPU until a tick is counted: on a loaded machine 60 ms of wall time can hold
        // less than one tick of this process's own CPU, so the bound is generous and the
        // loop ends as soon as the count moves.
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while cpu_ticks(me).unwrap() == 0 && t.elapsed() < std::time::Duration::from_secs(20) {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        assert!(cpu_ticks(me).unwrap() > 0);
        assert!(rss_kib(me).unwrap() > 100);
        assert!(thread_ticks(me).contains_key(&me));
        assert_eq!(tree(me)[0], me);
        // A child (and its own child) pruned away: lockbench's tree without its servers.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 5 & wait"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let t = std::time::Instant::now();
        while tree(me).len() < 3 && t.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(tree(pid).len() >= 2, "sh and its sleep");
        assert!(tree(me).contains(&pid));
        let pruned = tree_pruned(me, &[pid]);
        assert!(pruned.iter().all(|p| !tree(pid).contains(p)), "{pruned:?}");
        assert_eq!(pruned[0], me);
        let grandchildren: Vec<String> = tree(pid)[1..].iter().map(u32::to_string).collect();
        let _ = std::process::Command::new("kill")
            .arg("-9")
            .args(&grandchildren)
            .status();
        child.kill().unwrap();
        child.wait().unwrap();
        let (busy, total) = machine_ticks().unwrap();
        assert!(busy > 0 && total > busy);
        assert_eq!(cpu_ticks(u32::MAX), None);
    }
}
