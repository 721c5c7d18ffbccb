//! `packet-loss`: iptables' `statistic` match drops a share of the packets on chosen links,
//! and the rules' own counters say how many it dropped.
//!
//! `tc netem` is missing from this kernel; the `statistic` match works in the managed hosts'
//! namespaces and in containers' alike. For each link (a target server and a client peer:
//! a client host, or the coordinator's address) four rules go into the *server's* namespace:
//! a counting rule and a DROP rule for what arrives from the peer (INPUT `-s`), and the same
//! for what leaves for it (OUTPUT `-d`), so both directions lose packets and the coordinator's
//! own namespace (the root one) is never touched. A reply dropped in OUTPUT is a local drop:
//! the server's kernel sees it and retries later, where a real network would have lost it
//! silently; a request dropped in INPUT is lost as on a wire.
//!
//! `random` draws from the kernel's own random numbers (`get_random_u32`), which no seed
//! reaches: two runs with the same seed drop different packets. `nth` drops exactly every
//! n-th packet of each rule (n = 1/rate), the same ones in every run with the same traffic.
//!
//! Verified like every other fault: right after the rules are added, [`PROBE`] UDP datagrams
//! go each way on every link, and the counters must show a dropped share within
//! [`tolerance`] of the asked rate; otherwise the rules are removed again and the fault is
//! recorded as not applied, with the figures. At `heal` the counters give the share dropped
//! of the window's own traffic (the probe's taken off), in the stop event's note.

use crate::ServerNemesis;
use crate::server_nemesis::unavailable;
use crate::site::Site;
use lockbench_cluster::{Host, ServerSpec};
use lockbench_core::{FaultEvent, FaultKind, FaultPhase, LossMode, RunClock, Targets};
use std::net::Ipv4Addr;

/// The kind its events are recorded as.
const KIND: FaultKind = FaultKind::PacketLoss;
/// Datagrams sent each way on each link to check the rules right after they are added.
pub(crate) const PROBE: u64 = 400;
/// The comment every rule of this fault carries (how counters are found and rules removed).
const COMMENT: &str = "lockbench packet-loss";
/// A port nothing listens on (UDP discard): probe datagrams only have to cross the rules.
const DISCARD: u16 = 9;

/// Packets counted by the rules: all that reached them, and those dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Packets that reached the counting rules.
    pub total: u64,
    /// Packets the DROP rules dropped.
    pub dropped: u64,
}

impl Counts {
    /// `self - before`, never below zero.
    pub fn since(self, before: Counts) -> Counts {
        Counts {
            total: self.total.saturating_sub(before.total),
            dropped: self.dropped.saturating_sub(before.dropped),
        }
    }

    /// The dropped share, `None` with no packets.
    pub fn share(self) -> Option<f64> {
        (self.total > 0).then(|| self.dropped as f64 / self.total as f64)
    }

    /// `1,234 of 12,345 packets dropped (10.0%)`.
    pub fn describe(self) -> String {
        match self.share() {
            Some(s) => format!(
                "{} of {} packets dropped ({:.1}%)",
                self.dropped,
                self.total,
                100.0 * s
            ),
            None => "no packet crossed the rules".to_string(),
        }
    }
}

/// How far a measured share may be from `rate` after `n` packets through `rules` DROP rules:
/// four standard deviations of a binomial draw of `n` packets (random: a correct rule misses
/// it about once in 16,000 checks), plus one packet per rule (nth: each rule drops one in every
/// n, so a rule is off by at most one packet).
pub(crate) fn tolerance(rate: f64, n: u64, rules: usize) -> f64 {
    let n = n.max(1) as f64;
    4.0 * (rate * (1.0 - rate) / n).sqrt() + rules as f64 / n
}

/// The rules of the links from `peers` to the server whose namespace they go in, without the
/// `-A`/`-D` (one per line: chain first).
pub(crate) fn rules(peers: &[Ipv4Addr], rate: f64, mode: LossMode) -> Vec<String> {
    let stat = match mode {
        LossMode::Random => format!("-m statistic --mode random --probability {rate}"),
        LossMode::Nth => format!("-m statistic --mode nth --every {} --packet 0", every(rate)),
    };
    let mut out = Vec::new();
    for p in peers {
        for (chain, dir) in [("INPUT", "-s"), ("OUTPUT", "-d")] {
            out.push(format!(
                "{chain} {dir} {p} -m comment --comment \"{COMMENT}\""
            ));
            out.push(format!(
                "{chain} {dir} {p} {stat} -m comment --comment \"{COMMENT}\" -j DROP"
            ));
        }
    }
    out
}

/// n of `nth` mode for `rate` (1/rate, which the scenario checks is whole).
pub(crate) fn every(rate: f64) -> u64 {
    (1.0 / rate).round() as u64
}

/// Adds (`-A`) or deletes (`-D`) `rules` inside `host`, in one `iptables-restore --noflush`.
pub(crate) fn change(host: &Host, op: &str, rules: &[String]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut text = String::from("*filter\n");
    for r in rules {
        text.push_str(&format!("{op} {r}\n"));
    }
    text.push_str("COMMIT\n");
    let mut cmd = host.command("iptables-restore");
    cmd.args(["-w", "--noflush"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn()?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(text.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        anyhow::bail!(
            "iptables-restore in {}: {}",
            host.name,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// The counters of this fault's rules inside `host`.
pub(crate) fn counts(host: &Host) -> anyhow::Result<Counts> {
    let out = host.command("iptables").args(["-w", "-S", "-v"]).output()?;
    if !out.status.success() {
        anyhow::bail!(
            "iptables -S -v in {}: {}",
            host.name,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(parse_counts(&String::from_utf8_lossy(&out.stdout)))
}

/// Sums `-c <packets> <bytes>` over the lines of this fault's rules in `iptables -S -v`.
fn parse_counts(listing: &str) -> Counts {
    let mut c = Counts::default();
    for line in listing.lines().filter(|l| l.contains(COMMENT)) {
        let mut words = line.split_whitespace();
        let packets = words
            .by_ref()
            .skip_while(|w| *w != "-c")
            .nth(1)
            .and_then(|p| p.parse::<u64>().ok())
            .unwrap_or(0);
        if line.contains("-j DROP") {
            c.dropped += packets;
        } else {
            c.total += packets;
        }
    }
    c
}

/// Sends [`PROBE`] datagrams to each of `to` from `from`'s namespace (`None`: from here, the
/// coordinator's). Datagrams the local OUTPUT rules drop fail to send; that is the point.
pub(crate) fn probe(from: Option<&Host>, to: Vec<Ipv4Addr>) -> anyhow::Result<()> {
    lockbench_cluster::entry::send_udp(from, to, DISCARD, PROBE)
}

/// An open `packet-loss` window: where its rules are, and what the probe put through them.
pub(crate) struct Window {
    /// The resolved targets, as the start event names them.
    pub targets: Vec<String>,
    /// The hosts holding its rules.
    pub hosts: Vec<Host>,
    /// The counters right after the probe.
    pub after_probe: Counts,
}

/// The sum of this fault's counters over `hosts`.
fn counts_of(hosts: &[Host]) -> anyhow::Result<Counts> {
    let mut sum = Counts::default();
    for h in hosts {
        let c = counts(h)?;
        sum.total += c.total;
        sum.dropped += c.dropped;
    }
    Ok(sum)
}

impl<S: Site> ServerNemesis<S> {
    /// `packet-loss` on the links between `t`'s servers and the clients (or between `t`'s
    /// client hosts and every server): rules added, probed, checked against the rate.
    pub(crate) async fn packet_loss(
        &mut self,
        t: &Targets,
        rate: f64,
        mode: LossMode,
        clock: &RunClock,
    ) -> FaultEvent {
        let Some(coordinator) = self.site.coordinator_addr() else {
            return FaultEvent::not_applied(clock, KIND, vec![], unavailable("packet faults"));
        };
        let targets = match self.resolve(t).await {
            Ok(t) => t,
            Err(e) => return FaultEvent::not_applied(clock, KIND, vec![], format!("{e:#}")),
        };
        let clients = self.client_hosts();
        let named_clients: Vec<Host> = clients
            .iter()
            .filter(|c| targets.contains(&c.name))
            .cloned()
            .collect();
        let named_servers: Vec<&'static ServerSpec> = self
            .servers
            .iter()
            .copied()
            .filter(|s| targets.iter().any(|t| t == s.name))
            .collect();
        // Links: named servers x every client (the coordinator's address included), or every
        // server x the named client hosts.
        let servers = if named_servers.is_empty() {
            self.servers.clone()
        } else {
            named_servers
        };
        let peers: Vec<(Option<Host>, Ipv4Addr)> = if named_clients.is_empty() {
            let mut p = vec![(None, coordinator)];
            p.extend(clients.into_iter().map(|h| {
                let a = h.addr;
                (Some(h), a)
            }));
            p
        } else {
            named_clients
                .into_iter()
                .map(|h| {
                    let a = h.addr;
                    (Some(h), a)
                })
                .collect()
        };
        let mut hosts = Vec::new();
        let mut missing = Vec::new();
        let mut server_addrs = Vec::new();
        for s in &servers {
            match self.site.server_host(s) {
                Some(h) => {
                    server_addrs.push(h.addr);
                    hosts.push(h);
                }
                None => missing.push(s.name),
            }
        }
        if hosts.is_empty() {
            return FaultEvent::not_applied(
                clock,
                KIND,
                targets,
                format!("no target server runs: {}", missing.join(", ")),
            );
        }
        let peer_addrs: Vec<Ipv4Addr> = peers.iter().map(|p| p.1).collect();
        let lines = rules(&peer_addrs, rate, mode);
        let drop_rules = hosts.len() * peer_addrs.len() * 2;
        let (hosts2, lines2, peer_addrs2) = (hosts.clone(), lines.clone(), peer_addrs.clone());
        let added = tokio::task::spawn_blocking(move || -> anyhow::Result<Counts> {
            for h in &hosts2 {
                change(h, "-A", &lines2)?;
            }
            let before = counts_of(&hosts2)?;
            // Both ways on every link: the clients' side to the servers, the servers to them.
            for (from, _) in &peers {
                probe(from.as_ref(), server_addrs.clone())?;
            }
            for h in &hosts2 {
                probe(Some(h), peer_addrs2.clone())?;
            }
            Ok(counts_of(&hosts2)?.since(before))
        })
        .await;
        let how = match mode {
            LossMode::Random => format!(
                "random, p = {rate} (the kernel's random numbers: not seeded, other packets in \
                 every run)"
            ),
            LossMode::Nth => format!("nth: every {}th packet", every(rate)),
        };
        let links = format!(
            "iptables statistic DROP ({how}) both ways inside {} ({}) on their links with {}",
            self.site.hosts_are(),
            hosts
                .iter()
                .map(|h| h.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            peer_addrs
                .iter()
                .map(|a| if *a == coordinator {
                    format!("{a} (coordinator)")
                } else {
                    a.to_string()
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        let not_running = if missing.is_empty() {
            String::new()
        } else {
            format!(" (not running, so no rules inside: {})", missing.join(", "))
        };
        let probed = match added {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                self.remove_loss(&hosts, &lines).await;
                return FaultEvent::not_applied(
                    clock,
                    KIND,
                    targets,
                    format!("iptables failed: {e:#}"),
                );
            }
            Err(e) => return FaultEvent::not_applied(clock, KIND, targets, e.to_string()),
        };
        let tol = tolerance(rate, probed.total, drop_rules);
        let measured = probed.share();
        // Every probe datagram must have crossed the rules (a partition's DROP comes first).
        let expected = PROBE * drop_rules as u64;
        let within = measured.is_some_and(|m| (m - rate).abs() <= tol) && probed.total >= expected;
        let check = format!(
            "checked with {PROBE} UDP datagrams each way per link ({expected} expected at the \
             rules): {} (asked {:.1}%, tolerance ±{:.1} points)",
            probed.describe(),
            100.0 * rate,
            100.0 * tol
        );
        if !within {
            self.remove_loss(&hosts, &lines).await;
            return FaultEvent::not_applied(
                clock,
                KIND,
                targets,
                format!("NOT APPLIED: the rules were added, yet {check} (rules removed): {links}"),
            );
        }
        let after_probe = match tokio::task::spawn_blocking({
            let hosts = hosts.clone();
            move || counts_of(&hosts)
        })
        .await
        {
            Ok(Ok(c)) => c,
            _ => Counts::default(),
        };
        self.windows.push((KIND, targets.clone()));
        self.losses.push(Window {
            targets: targets.clone(),
            hosts,
            after_probe,
        });
        FaultEvent::now(
            clock,
            KIND,
            FaultPhase::Start,
            targets,
            format!("{links}{not_running}; {check}"),
            true,
        )
    }

    /// Deletes `lines` from `hosts` (a check that failed: other faults' rules stay).
    async fn remove_loss(&mut self, hosts: &[Host], lines: &[String]) {
        let (hosts, lines) = (hosts.to_vec(), lines.to_vec());
        let _ = tokio::task::spawn_blocking(move || {
            for h in &hosts {
                let _ = change(h, "-D", &lines);
            }
        })
        .await;
    }

    /// For each open `packet-loss` window (verb, targets, note): the share its rules dropped
    /// of the window's own traffic, the probe's taken off. Read before a heal flushes them.
    pub(crate) async fn measure_losses(&mut self) -> Vec<(FaultKind, Vec<String>, String)> {
        let windows = std::mem::take(&mut self.losses);
        let mut out = Vec::new();
        for w in windows {
            let hosts = w.hosts.clone();
            let now = tokio::task::spawn_blocking(move || counts_of(&hosts)).await;
            let note = match now {
                Ok(Ok(c)) => format!(
                    "measured over the window's traffic: {}",
                    c.since(w.after_probe).describe()
                ),
                Ok(Err(e)) => format!("counters unreadable: {e:#}"),
                Err(e) => format!("counters unreadable: {e}"),
            };
            out.push((KIND, w.targets, note));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_summed_per_kind() {
        let listing = r#"-P INPUT ACCEPT -c 10 100
-A INPUT -s 10.77.0.1/32 -m comment --comment "lockbench packet-loss" -c 400 11200
-A INPUT -s 10.77.0.1/32 -m statistic --mode nth --every 4 --packet 0 -m comment --comment "lockbench packet-loss" -j DROP -c 100 2800
-A INPUT -s 10.77.0.9/32 -j DROP -c 7 70
-A OUTPUT -d 10.77.0.1/32 -m comment --comment "lockbench packet-loss" -c 300 8400
-A OUTPUT -d 10.77.0.1/32 -m statistic --mode nth --every 4 --packet 0 -m comment --comment "lockbench packet-loss" -j DROP -c 75 2100
"#;
        let c = parse_counts(listing);
        assert_eq!(
            c,
            Counts {
                total: 700,
                dropped: 175
            }
        );
        assert_eq!(c.share(), Some(0.25));
        assert_eq!(Counts::default().share(), None);
    }

    #[test]
    fn rules_drop_both_ways_in_either_mode() {
        let peers = [Ipv4Addr::new(10, 77, 0, 1)];
        let r = rules(&peers, 0.25, LossMode::Nth);
        assert_eq!(r.len(), 4);
        assert!(r[1].starts_with("INPUT -s 10.77.0.1 -m statistic --mode nth --every 4"));
        assert!(r[3].starts_with("OUTPUT -d 10.77.0.1 "));
        let r = rules(&peers, 0.1, LossMode::Random);
        assert!(r[1].contains("--mode random --probability 0.1 "), "{r:?}");
    }

    /// The tolerance narrows with more packets and never hides a rule that drops nothing.
    #[test]
    fn the_tolerance_shrinks_with_the_sample() {
        assert!(tolerance(0.1, 3200, 8) < tolerance(0.1, 800, 8));
        assert!(tolerance(0.1, 3200, 8) < 0.1 / 2.0);
    }
}
