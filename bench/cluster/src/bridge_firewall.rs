//! The one rule lockbench may add to the root namespace's firewall: accept traffic bridged
//! between its own hosts on its own bridge.
//!
//! Why it exists: a host that runs Docker has `br_netfilter` loaded and
//! `net.bridge.bridge-nf-call-iptables = 1`, so frames switched between two ports of *any*
//! Linux bridge go through the root namespace's iptables `FORWARD` chain, whose policy dockerd
//! sets to `DROP`. Without this rule ZooKeeper and etcd members never see each other (and
//! client hosts never reach servers), and `up` times out with no word about why.
//!
//! Why it has this shape:
//! - **Narrow.** One rule, `-i <bridge> -o <bridge> -j ACCEPT`: only frames that enter *and*
//!   leave lockbench's own bridge, nothing routed, nothing on Docker's bridges. It carries a
//!   comment naming the bridge, so it is recognisable in `iptables -S` and by crash recovery.
//! - **Only when needed.** Added only while bridged traffic is filtered at all (the sysctl
//!   above is 1); a host without `br_netfilter` is left untouched. No sysctl is ever changed:
//!   turning `bridge-nf-call-iptables` off would change Docker's own isolation.
//! - **Recorded and undone.** The rule's exact arguments are written to
//!   `/run/lockbench-net-<prefix>forward` before it is added; `down` (and the next `up` after a
//!   crash, through `down`'s teardown) deletes every copy of it, found both by the record and by
//!   its comment, so the host's `iptables-save` ends exactly as it was.
//! - **Verified.** `check_forwarding` opens a TCP connection between two hosts within a few
//!   seconds, so a firewall that still drops them fails `up` at once, naming cause and fix.

use crate::hosts::{Host, NetConfig};
use anyhow::{Context, bail};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Where the kernel says whether bridged IPv4 frames go through iptables.
const BRIDGE_NF_SYSCTL: &str = "/proc/sys/net/bridge/bridge-nf-call-iptables";

/// How long `check_forwarding` waits for one connection between two hosts.
const FORWARD_CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// `true` when bridged IPv4 traffic passes the root namespace's iptables (`br_netfilter`
/// loaded and `net.bridge.bridge-nf-call-iptables = 1`), as on every Docker host.
pub fn bridged_traffic_filtered() -> bool {
    std::fs::read_to_string(BRIDGE_NF_SYSCTL).is_ok_and(|v| v.trim() == "1")
}

/// The rule's arguments after the chain name (`-i lb-br0 -o lb-br0 -m comment ... -j ACCEPT`).
fn rule_args(cfg: &NetConfig) -> Vec<String> {
    let br = cfg.bridge();
    vec![
        "-i".into(),
        br.clone(),
        "-o".into(),
        br.clone(),
        "-m".into(),
        "comment".into(),
        "--comment".into(),
        comment(cfg),
        "-j".into(),
        "ACCEPT".into(),
    ]
}

/// The comment that marks the rule as lockbench's, for this bridge only.
fn comment(cfg: &NetConfig) -> String {
    format!("lockbench: traffic between hosts on {}", cfg.bridge())
}

fn record_file(cfg: &NetConfig) -> PathBuf {
    PathBuf::from(format!("/run/lockbench-net-{}forward", cfg.prefix))
}

/// Makes sure bridged traffic between lockbench's hosts is accepted: adds the rule (first in
/// `FORWARD`, before Docker's chains) when bridged traffic is filtered and the rule is not
/// there yet. Idempotent. Errors name the rule and how to add it by hand.
pub(crate) fn allow(cfg: &NetConfig) -> anyhow::Result<()> {
    if !bridged_traffic_filtered() || present(cfg) {
        return Ok(());
    }
    let args = rule_args(cfg);
    std::fs::write(record_file(cfg), format!("FORWARD {}\n", args.join(" ")))
        .with_context(|| format!("cannot write {}", record_file(cfg).display()))?;
    let mut insert = vec!["-I".to_string(), "FORWARD".into(), "1".into()];
    insert.extend(args);
    iptables(&insert).with_context(|| {
        format!(
            "this host filters bridged traffic (net.bridge.bridge-nf-call-iptables = 1, as \
             dockerd sets it), so lockbench must accept traffic on its own bridge {} in the \
             root namespace's FORWARD chain, and adding that rule failed; add it yourself with \
             `iptables -I FORWARD 1 -i {0} -o {0} -j ACCEPT`, or use LOCKBENCH_TOPOLOGY=loopback",
            cfg.bridge()
        )
    })?;
    tracing::info!(
        bridge = cfg.bridge(),
        "root FORWARD chain: accepting traffic between lockbench hosts (removed on `down`)"
    );
    Ok(())
}

/// `true` while the rule is in the root namespace's `FORWARD` chain.
pub fn present(cfg: &NetConfig) -> bool {
    let mut check = vec!["-C".to_string(), "FORWARD".into()];
    check.extend(rule_args(cfg));
    iptables(&check).is_ok()
}

/// Deletes every copy of the rule (by its exact arguments, and any `FORWARD` rule carrying its
/// comment) and the record. Idempotent; returns how many rules it deleted.
pub(crate) fn remove(cfg: &NetConfig) -> anyhow::Result<usize> {
    let mut deleted = 0;
    let mut delete = vec!["-D".to_string(), "FORWARD".into()];
    delete.extend(rule_args(cfg));
    while deleted < 100 && iptables(&delete).is_ok() {
        deleted += 1;
    }
    // A rule of ours that differs in some argument (an older lockbench) still carries the
    // comment; `-S` prints it in a form `-D` accepts.
    if let Ok(listing) = iptables(&["-S".to_string(), "FORWARD".into()]) {
        let marker = format!("\"{}\"", comment(cfg));
        for line in listing.lines().filter(|l| l.contains(&marker)) {
            let Some(rest) = line.strip_prefix("-A FORWARD ") else {
                continue;
            };
            let mut args = vec!["-D".to_string(), "FORWARD".into()];
            args.extend(shell_words(rest));
            if iptables(&args).is_ok() {
                deleted += 1;
            }
        }
    }
    let _ = std::fs::remove_file(record_file(cfg));
    if present(cfg) {
        bail!(
            "could not remove lockbench's FORWARD rule for {}; remove it with \
             `iptables -D FORWARD -i {0} -o {0} -m comment --comment \"{1}\" -j ACCEPT`",
            cfg.bridge(),
            comment(cfg)
        );
    }
    Ok(deleted)
}

/// Connects from `from` to a listener in `to`: proof that the two hosts reach each other
/// through the bridge. Fails within a few seconds, naming the likely cause and the fix.
pub(crate) fn check_forwarding(cfg: &NetConfig, from: &Host, to: &Host) -> anyhow::Result<()> {
    let bind = SocketAddr::from((to.addr, 0));
    let listener = to
        .run_inside(move || TcpListener::bind(bind))?
        .with_context(|| format!("cannot listen on {} in {}", to.addr, to.netns))?;
    let target = listener.local_addr()?;
    let connected = from.run_inside(move || {
        TcpStream::connect_timeout(&target, FORWARD_CHECK_TIMEOUT).map(|_| ())
    })?;
    drop(listener);
    if let Err(e) = connected {
        let why = if bridged_traffic_filtered() {
            format!(
                "this host passes bridged traffic through iptables \
                 (net.bridge.bridge-nf-call-iptables = 1, as dockerd sets it) and its FORWARD \
                 chain drops it{}: check `iptables -S FORWARD` and `iptables -S DOCKER-USER` \
                 for a rule that drops traffic on {}, or use LOCKBENCH_TOPOLOGY=loopback",
                if present(cfg) {
                    " despite lockbench's ACCEPT rule"
                } else {
                    ", and lockbench's ACCEPT rule is missing"
                },
                cfg.bridge()
            )
        } else {
            format!(
                "check the firewall of the root namespace and of {} / {}",
                from.netns, to.netns
            )
        };
        bail!(
            "lockbench's hosts cannot reach each other over the bridge {} ({} -> {target}: \
             {e}); {why}",
            cfg.bridge(),
            from.name
        );
    }
    Ok(())
}

fn iptables(args: &[String]) -> anyhow::Result<String> {
    let out = Command::new("iptables")
        .arg("-w")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("cannot run iptables")?;
    if !out.status.success() {
        bail!(
            "iptables {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Splits an `iptables -S` line into arguments, honouring double quotes (comments).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut has_word = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                has_word = true;
            }
            ' ' if !quoted => {
                if has_word {
                    words.push(std::mem::take(&mut word));
                    has_word = false;
                }
            }
            c => {
                word.push(c);
                has_word = true;
            }
        }
    }
    if has_word {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iptables_listing_splits_into_arguments() {
        let line = r#"-i lb-br0 -o lb-br0 -m comment --comment "lockbench: traffic between hosts on lb-br0" -j ACCEPT"#;
        let words = shell_words(line);
        assert_eq!(words, rule_args(&NetConfig::default()));
    }
}
