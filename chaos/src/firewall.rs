//! Applying a grudge with iptables *inside* the hosts' namespaces, and flushing it.
//!
//! For every host with a namespace (servers and client hosts: the managed cluster's named
//! namespaces, or containers' namespaces) and every peer it holds a grudge against:
//! `-A INPUT -s <peer address> -j DROP` in that namespace (one `iptables-restore` per host). The coordinator has no
//! namespace of its own (it runs in the root namespace, whose firewall is never touched): a
//! grudge *against* it is a rule on the other side dropping the address its packets come from
//! (the bridge's). Heal = `iptables -F INPUT` (and `OUTPUT`, where `packet-loss` has rules) in
//! every host the rules can be in (the nemesis's servers' and the client hosts).

use crate::grudge::Grudge;
use anyhow::Context;
use lockbench_cluster::Host;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// Adds DROP rules for `grudge` inside `hosts` (a host missing there, like the coordinator,
/// gets no rules: its side is enforced by its peers'), dropping the peers' `addrs` (the
/// coordinator's included, under [`COORDINATOR`]); returns the number of rules added. Each
/// host's rules go in with one command, the hosts in parallel: on the compose cluster every
/// command is a `docker exec`, which a loaded machine makes slow, and a partition's rules
/// should take effect together.
pub(crate) fn apply(
    hosts: &BTreeMap<String, Host>,
    addrs: &BTreeMap<String, Ipv4Addr>,
    grudge: &Grudge,
) -> anyhow::Result<usize> {
    let mut each: Vec<(&Host, Vec<String>)> = Vec::new();
    for (host, peers) in grudge {
        let Some(h) = hosts.get(host) else {
            continue;
        };
        let rules = peers
            .iter()
            .map(|peer| {
                let addr = addrs.get(peer).with_context(|| format!("no host {peer}"))?;
                Ok(format!("INPUT -s {addr} -j DROP"))
            })
            .collect::<anyhow::Result<Vec<String>>>()?;
        each.push((h, rules));
    }
    in_parallel(&each, "adding rules", |(h, rules)| {
        h.append_rules(rules).map(|()| rules.len())
    })
    .into_iter()
    .sum()
}

/// `work` on every item, each on a thread of its own (on the compose cluster every `iptables` is
/// a `docker exec`, which a loaded machine makes slow); the outcomes in the items' order, a
/// panic as an error naming `what`.
fn in_parallel<I: Sync, T: Send>(
    items: &[I],
    what: &str,
    work: impl Fn(&I) -> anyhow::Result<T> + Sync,
) -> Vec<anyhow::Result<T>> {
    std::thread::scope(|scope| {
        let running: Vec<_> = items
            .iter()
            .map(|item| scope.spawn(|| work(item)))
            .collect();
        running
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("{what} panicked")))
            })
            .collect()
    })
}

/// Flushes the INPUT and OUTPUT chains (`packet-loss` has rules in both) of each of `hosts`
/// that has rules; returns those hosts' names. The hosts are listed and flushed in parallel: on
/// the compose cluster each `iptables` is a `docker exec`, which a loaded machine makes slow.
pub(crate) fn flush_all(hosts: Vec<Host>) -> anyhow::Result<Vec<String>> {
    let mut flushed = Vec::new();
    for outcome in in_parallel(&hosts, "a flush", flush_host) {
        flushed.extend(outcome?);
    }
    Ok(flushed)
}

/// Flushes `h`'s INPUT and OUTPUT chains when it has rules; its name if it had.
fn flush_host(h: &Host) -> anyhow::Result<Option<String>> {
    if !h.has_firewall_rules(None) {
        return Ok(None);
    }
    for chain in ["INPUT", "OUTPUT"] {
        h.iptables(&["-F", chain])?;
    }
    Ok(Some(h.name.clone()))
}
