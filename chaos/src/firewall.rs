//! Applying a grudge with iptables *inside* the hosts' namespaces, and flushing it.
//!
//! For every host with a namespace (servers and client hosts) and every peer it holds a
//! grudge against: `iptables -w -A INPUT -s <peer address> -j DROP` in that namespace. The
//! coordinator has no namespace of its own (it runs in the root namespace, whose firewall is
//! never touched): a grudge *against* it is a rule on the other side dropping the bridge
//! address, which is where its packets come from. Heal = `iptables -F INPUT` in every host.

use crate::grudge::{COORDINATOR, Grudge};
use anyhow::Context;
use lockbench_cluster::{Host, Network};
use std::collections::BTreeMap;

/// Adds DROP rules for `grudge`; returns the number of rules added.
pub(crate) fn apply(
    net: &Network,
    hosts: &BTreeMap<String, Host>,
    grudge: &Grudge,
) -> anyhow::Result<usize> {
    let mut rules = 0;
    for (host, peers) in grudge {
        let Some(h) = hosts.get(host) else {
            continue; // the coordinator: its side is enforced by the peers' rules
        };
        for peer in peers {
            let addr = if peer == COORDINATOR {
                net.config().bridge_addr()
            } else {
                hosts
                    .get(peer)
                    .with_context(|| format!("no host {peer}"))?
                    .addr
            };
            h.iptables(&["-A", "INPUT", "-s", &addr.to_string(), "-j", "DROP"])?;
            rules += 1;
        }
    }
    Ok(rules)
}

/// Flushes the INPUT chain of every existing host of the network; returns the hosts that
/// had rules.
pub(crate) fn flush_all(net: &Network) -> anyhow::Result<Vec<String>> {
    let mut flushed = Vec::new();
    for h in net.existing_hosts() {
        if h.has_firewall_rules(Some("INPUT")) {
            h.iptables(&["-F", "INPUT"])?;
            flushed.push(h.name);
        }
    }
    Ok(flushed)
}
