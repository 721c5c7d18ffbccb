//! Hosts: network namespaces on a bridge the project creates, one per server and per
//! fault-targeted client process.
//!
//! A host is a namespace `lb-<name>` (`lb-zk1`, `lb-redlock3`, `lb-client2`) whose `eth0` is
//! one end of a veth pair; the other end (named like the namespace) is enslaved to the bridge
//! `lb-br0` in the root namespace, which holds `.1` of the subnet (default `10.77.0.0/24`), so
//! the coordinator process reaches every host directly. Namespaces get no default route:
//! nothing inside can reach any address outside the project's subnet. The root namespace's
//! firewall is touched in one place only: on a host that filters bridged traffic (every Docker
//! host), [`crate::bridge_firewall`] accepts traffic between ports of our own bridge, and
//! `teardown` removes that rule again.
//!
//! Everything is done by shelling out to `ip` (iproute2): it is what an operator would type,
//! its errors are readable, and the commands are few and fast. Ownership is by *exact* name:
//! only `<prefix><server name>`, `<prefix>client<N>`, `<prefix>br0` and `<prefix>probe-<pid>`
//! are ever deleted, so a second network with another prefix (`lb-t1-`, as tests use) is never
//! mistaken for ours. Creating hosts is serialised across processes by `flock` on
//! `/run/lockbench-net-<prefix>.lock`.

use crate::spec::SERVERS;
use anyhow::{Context, anyhow, bail};
use lockbench_core::ServerSpec;
use nix::fcntl::{Flock, FlockArg};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The project's private network: a name prefix and a subnet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetConfig {
    /// Prefix of every namespace, veth and bridge name (`lb-`). Starts with `lb-`, at most 7
    /// characters (interface names are limited to 15).
    pub prefix: String,
    /// The subnet's network address (`10.77.0.0`).
    pub subnet: Ipv4Addr,
    /// The subnet's prefix length (16..=24; hosts use offsets .1-.254 of its first /24).
    pub prefix_len: u8,
}

impl Default for NetConfig {
    fn default() -> NetConfig {
        NetConfig {
            prefix: "lb-".into(),
            subnet: Ipv4Addr::new(10, 77, 0, 0),
            prefix_len: 24,
        }
    }
}

/// Offset of client host 1's address (`client<i>` is `.100+i`).
const CLIENT_BASE: u8 = 100;
/// The most client hosts one network can have.
pub const MAX_CLIENT_HOSTS: u32 = 150;

impl NetConfig {
    /// `LOCKBENCH_SUBNET` (e.g. `10.77.0.0/24`) and `LOCKBENCH_NETNS_PREFIX` (e.g. `lb-`), each
    /// defaulting to [`NetConfig::default`].
    pub fn from_env() -> anyhow::Result<NetConfig> {
        let mut cfg = NetConfig::default();
        if let Some(subnet) = std::env::var("LOCKBENCH_SUBNET")
            .ok()
            .filter(|s| !s.is_empty())
        {
            let (base, len) = parse_subnet(&subnet).context("LOCKBENCH_SUBNET")?;
            cfg.subnet = base;
            cfg.prefix_len = len;
        }
        if let Some(prefix) = std::env::var("LOCKBENCH_NETNS_PREFIX")
            .ok()
            .filter(|s| !s.is_empty())
        {
            cfg.prefix = prefix;
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// A configuration with another prefix and subnet (tests use their own network).
    pub fn new(prefix: &str, subnet: &str) -> anyhow::Result<NetConfig> {
        let (subnet, prefix_len) = parse_subnet(subnet)?;
        let cfg = NetConfig {
            prefix: prefix.to_string(),
            subnet,
            prefix_len,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    fn validate(&self) -> anyhow::Result<()> {
        let p = &self.prefix;
        if !p.starts_with("lb-")
            || p.len() > 7
            || !p
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            bail!(
                "network prefix {p:?}: must start with `lb-`, be at most 7 characters of a-z0-9-"
            );
        }
        if !(16..=24).contains(&self.prefix_len) {
            bail!(
                "subnet /{}: the prefix length must be 16..=24",
                self.prefix_len
            );
        }
        if u32::from(self.subnet) & !mask(self.prefix_len) != 0 {
            bail!(
                "subnet {}/{}: not a network address",
                self.subnet,
                self.prefix_len
            );
        }
        Ok(())
    }

    /// `10.77.0.0/24`.
    pub fn cidr(&self) -> String {
        format!("{}/{}", self.subnet, self.prefix_len)
    }

    /// `true` when `a` is in the subnet.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        let m = mask(self.prefix_len);
        u32::from(a) & m == u32::from(self.subnet) & m
    }

    /// The address with last-octet offset `octet` in the subnet.
    pub fn addr(&self, octet: u8) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.subnet) + u32::from(octet))
    }

    /// The bridge's address (`.1`): where the coordinator's traffic comes from.
    pub fn bridge_addr(&self) -> Ipv4Addr {
        self.addr(1)
    }

    /// The bridge's name (`lb-br0`).
    pub fn bridge(&self) -> String {
        format!("{}br0", self.prefix)
    }

    /// The namespace (and host-side veth) name of host `name` (`lb-zk1`).
    pub fn netns_name(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// `true` for a host name this network can own: a server's name or `client<N>`.
    fn is_host_name(name: &str) -> bool {
        SERVERS.iter().any(|s| s.name == name)
            || name
                .strip_prefix("client")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }

    /// `true` for a namespace or link name that belongs to this network.
    fn owns(&self, name: &str) -> bool {
        let Some(rest) = name.strip_prefix(&self.prefix) else {
            return false;
        };
        rest == "br0"
            || NetConfig::is_host_name(rest)
            || rest
                .strip_prefix("probe-")
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
    }
}

fn mask(len: u8) -> u32 {
    if len == 0 { 0 } else { u32::MAX << (32 - len) }
}

fn parse_subnet(s: &str) -> anyhow::Result<(Ipv4Addr, u8)> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| anyhow!("{s:?}: expected a.b.c.d/len"))?;
    let addr: Ipv4Addr = a.parse().with_context(|| format!("{s:?}"))?;
    let len: u8 = l.parse().with_context(|| format!("{s:?}"))?;
    if len > 32 {
        bail!("{s:?}: prefix length > 32");
    }
    Ok((addr, len))
}

/// One host: a network namespace with one address on the project's subnet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// The host's name (`zk1`, `client2`).
    pub name: String,
    /// Its namespace: a name under `/run/netns` (`lb-zk1`), or the absolute path of a
    /// namespace file (`/proc/<pid>/ns/net`: a container's, which has no name).
    pub netns: String,
    /// Its address.
    pub addr: Ipv4Addr,
    /// The container to `docker exec` into instead of entering [`Host::netns`] (a compose
    /// container when this process cannot enter namespaces: no host root, or lockbench in a
    /// container of its own; see [`crate::entry`]). `None`: enter the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<String>,
}

impl Host {
    /// A command that runs `program` inside this host (`ip netns exec <netns> <program>`, or
    /// `nsenter --net=<path> <program>` for a namespace given by path; both exec the program,
    /// so the child's pid is the program's). Add arguments, stdio and so on as usual;
    /// `tokio::process::Command::from` makes it async. For a host reached by `docker exec`
    /// ([`Host::exec`]): `docker exec -i -u 0 <container> <program>`, as root inside it.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        if let Some(container) = &self.exec {
            let mut cmd = Command::new("docker");
            cmd.args(crate::entry::exec_args(container)).arg(program);
            return cmd;
        }
        if self.netns.starts_with('/') {
            let mut cmd = Command::new("nsenter");
            cmd.arg(format!("--net={}", self.netns)).arg(program);
            return cmd;
        }
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.netns]).arg(program);
        cmd
    }

    /// Runs `f` on a fresh thread that has entered this host's network namespace (sockets it
    /// opens live in the host), and returns its result. Blocking: call from
    /// `spawn_blocking` in async code. A host reached by `docker exec` cannot run a closure
    /// inside: use [`Host::exchange`], [`Host::connects`] or [`Host::send_udp`], which work
    /// both ways.
    pub fn run_inside<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        if let Some(container) = &self.exec {
            bail!(
                "{} is reached by `docker exec {container}`, not by entering its namespace",
                self.name
            );
        }
        let path = netns_path(&self.netns);
        std::thread::spawn(move || -> anyhow::Result<T> {
            let file = std::fs::File::open(&path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
                .with_context(|| format!("cannot enter {}", path.display()))?;
            Ok(f())
        })
        .join()
        .map_err(|_| anyhow!("thread inside {} panicked", self.netns))?
    }

    /// The pids of every process inside this host (`ip netns pids`).
    pub fn pids(&self) -> Vec<u32> {
        netns_pids(&self.netns)
    }

    /// Runs `iptables -w <args>` inside this host.
    pub fn iptables(&self, args: &[&str]) -> anyhow::Result<()> {
        let mut cmd = self.command("iptables");
        cmd.arg("-w").args(args);
        run(cmd).with_context(|| format!("iptables {} in {}", args.join(" "), self.netns))?;
        Ok(())
    }

    /// Appends `rules` (each what follows `iptables -A`: `INPUT -s 10.77.0.11 -j DROP`) to this
    /// host's filter table at once, with one `iptables-restore --noflush`: one command (one
    /// `docker exec` for a container) however many rules, all added or none.
    pub fn append_rules(&self, rules: &[String]) -> anyhow::Result<()> {
        use std::io::Write;
        if rules.is_empty() {
            return Ok(());
        }
        let mut table = String::from("*filter\n");
        for rule in rules {
            table.push_str(&format!("-A {rule}\n"));
        }
        table.push_str("COMMIT\n");
        let mut cmd = self.command("iptables-restore");
        cmd.args(["-w", "--noflush"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot run iptables-restore in {}", self.name))?;
        let written = child
            .stdin
            .take()
            .expect("piped")
            .write_all(table.as_bytes());
        let out = child.wait_with_output()?;
        if !out.status.success() || written.is_err() {
            bail!(
                "iptables-restore in {} ({}): {}{}",
                self.name,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim(),
                written
                    .err()
                    .map(|e| format!(" (writing its rules: {e})"))
                    .unwrap_or_default()
            );
        }
        Ok(())
    }

    /// `true` when this host's firewall has rules appended (in `chain`, or in any chain); an
    /// `iptables` that cannot run counts as no rules.
    pub fn has_firewall_rules(&self, chain: Option<&str>) -> bool {
        let mut cmd = self.command("iptables");
        cmd.args(["-w", "-S"]).args(chain);
        cmd.output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .any(|l| l.starts_with("-A "))
            })
            .unwrap_or(false)
    }

    /// `true` while the namespace exists (a host reached by `docker exec`: while its
    /// container runs).
    pub fn exists(&self) -> bool {
        if let Some(container) = &self.exec {
            return crate::entry::container_runs(container);
        }
        netns_path(&self.netns).exists()
    }
}

/// How many of `sent` UDP datagrams sent from `from` (`None`: the caller's namespace) reach a
/// socket bound inside `to` (`None`: the caller's) on `to_addr`: a link's loss measured end to
/// end, independently of any firewall's counters (how the `packet-loss` tests check the rules).
/// A datagram a local OUTPUT rule drops fails to send and is simply not received. Paced (2 ms
/// after every 50), into a receive buffer with room for every datagram, so the receiver never
/// overflows even when a loaded machine keeps it from running for a while; blocking, about `sent` / 25 ms plus half a
/// second of silence at the end.
pub fn udp_delivered(
    from: Option<&Host>,
    to: Option<&Host>,
    to_addr: std::net::Ipv4Addr,
    sent: u32,
) -> anyhow::Result<u32> {
    use nix::sys::socket::{setsockopt, sockopt};
    use std::net::{SocketAddr, UdpSocket};
    use std::time::Duration;
    let bind = move || UdpSocket::bind(SocketAddr::from((to_addr, 0)));
    let rx = match to {
        Some(h) => h.run_inside(bind)??,
        None => bind()?,
    };
    rx.set_read_timeout(Some(Duration::from_millis(500)))?;
    // Room for every datagram: the sender bursts 50 at a time, and on a loaded machine the
    // counter can sleep through many bursts (measured: 394 of 2000 lost on a clean link at
    // load 21 with the default buffer). Beyond net.core.rmem_max with CAP_NET_ADMIN (root, as
    // these tests run); else as much as the limit allows.
    let room = 4 << 20;
    if setsockopt(&rx, sockopt::RcvBufForce, &room).is_err() {
        let _ = setsockopt(&rx, sockopt::RcvBuf, &room);
    }
    let dest = rx.local_addr()?;
    let counter = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let mut n = 0u32;
        while rx.recv(&mut buf).is_ok() {
            n += 1;
        }
        n
    });
    let send = move || -> std::io::Result<()> {
        let tx = UdpSocket::bind("0.0.0.0:0")?;
        for i in 0..sent {
            let _ = tx.send_to(b"lockbench loss count", dest);
            if i % 50 == 49 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        Ok(())
    };
    match from {
        Some(h) => h.run_inside(send)??,
        None => send()?,
    }
    counter
        .join()
        .map_err(|_| anyhow!("the datagram counter panicked"))
}

/// The project's network: a bridge and the hosts on it. Holds no resources; every call looks
/// at the system afresh, so any process can manage a network another one created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    cfg: NetConfig,
}

impl Network {
    /// The network described by `cfg`.
    pub fn new(cfg: NetConfig) -> Network {
        Network { cfg }
    }

    /// Its configuration.
    pub fn config(&self) -> &NetConfig {
        &self.cfg
    }

    /// The host of a server (whether it exists or not).
    pub fn server_host(&self, spec: &ServerSpec) -> Host {
        self.host(spec.name, spec.octet)
    }

    /// The host `client<i>` (1-based), created (with the bridge) if it does not exist yet.
    /// Idempotent, safe to call from several processes. Client hosts live until
    /// [`Network::remove_client_hosts`] or the cluster's `down`.
    pub fn client_host(&self, i: u32) -> anyhow::Result<Host> {
        if i == 0 || i > MAX_CLIENT_HOSTS {
            bail!("client host {i}: must be 1..={MAX_CLIENT_HOSTS}");
        }
        let host = self.host(&format!("client{i}"), CLIENT_BASE + i as u8);
        self.ensure(&host)?;
        Ok(host)
    }

    /// Client hosts that exist now, by index.
    pub fn client_hosts(&self) -> Vec<Host> {
        let mut hosts: Vec<(u32, Host)> = list_netns()
            .into_iter()
            .filter_map(|ns| {
                let i: u32 = ns
                    .strip_prefix(&self.cfg.prefix)?
                    .strip_prefix("client")?
                    .parse()
                    .ok()?;
                (1..=MAX_CLIENT_HOSTS)
                    .contains(&i)
                    .then(|| (i, self.host(&format!("client{i}"), CLIENT_BASE + i as u8)))
            })
            .collect();
        hosts.sort_by_key(|(i, _)| *i);
        hosts.into_iter().map(|(_, h)| h).collect()
    }

    /// Every host of this network that exists now (servers and clients).
    pub fn existing_hosts(&self) -> Vec<Host> {
        let mut hosts: Vec<Host> = SERVERS
            .iter()
            .map(|s| self.server_host(s))
            .filter(|h| h.exists())
            .collect();
        hosts.extend(self.client_hosts());
        hosts
    }

    fn host(&self, name: &str, octet: u8) -> Host {
        Host {
            name: name.to_string(),
            netns: self.cfg.netns_name(name),
            addr: self.cfg.addr(octet),
            exec: None,
        }
    }

    fn owner_file(&self) -> PathBuf {
        PathBuf::from(format!("/run/lockbench-net-{}owner", self.cfg.prefix))
    }

    /// The state directory of the cluster that owns this network (recorded by its `up`).
    pub fn owner(&self) -> Option<PathBuf> {
        let text = std::fs::read_to_string(self.owner_file()).ok()?;
        Some(PathBuf::from(text.trim_end_matches('\n')))
    }

    /// Records `state_dir` as this network's owner. One network serves one cluster: names and
    /// addresses are fixed per prefix, so a second cluster must use another prefix and subnet.
    pub(crate) fn claim(&self, state_dir: &Path) -> anyhow::Result<()> {
        std::fs::write(self.owner_file(), format!("{}\n", state_dir.display()))
            .with_context(|| format!("cannot write {}", self.owner_file().display()))
    }

    fn lock(&self) -> anyhow::Result<Flock<std::fs::File>> {
        let path = format!("/run/lockbench-net-{}lock", self.cfg.prefix);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {path}"))?;
        Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .with_context(|| format!("cannot lock {path}"))
    }

    /// Creates the bridge (if missing) and `host` (if missing or misconfigured).
    pub(crate) fn ensure(&self, host: &Host) -> anyhow::Result<()> {
        let _lock = self.lock()?;
        self.ensure_bridge()?;
        if host.exists() && self.host_ok(host) {
            return Ok(());
        }
        self.remove_host(host);
        let ns = &host.netns;
        let len = self.cfg.prefix_len.to_string();
        ip(&["netns", "add", ns])?;
        ip(&[
            "link", "add", ns, "type", "veth", "peer", "name", "eth0", "netns", ns,
        ])?;
        ip(&["link", "set", ns, "master", &self.cfg.bridge(), "up"])?;
        ip(&[
            "-n",
            ns,
            "addr",
            "add",
            &format!("{}/{len}", host.addr),
            "dev",
            "eth0",
        ])?;
        ip(&["-n", ns, "link", "set", "eth0", "up"])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
        tracing::debug!(host = host.name, addr = %host.addr, "host created");
        Ok(())
    }

    fn host_ok(&self, host: &Host) -> bool {
        let addr = format!("inet {}/{} ", host.addr, self.cfg.prefix_len);
        let inside = output(&["-n", &host.netns, "-4", "-o", "addr", "show", "dev", "eth0"]);
        let outside = output(&["-o", "link", "show", "dev", &host.netns]);
        inside.is_ok_and(|s| s.contains(&addr))
            && outside.is_ok_and(|s| s.contains(&format!("master {}", self.cfg.bridge())))
    }

    fn ensure_bridge(&self) -> anyhow::Result<()> {
        let br = self.cfg.bridge();
        let want = format!("inet {}/{} ", self.cfg.bridge_addr(), self.cfg.prefix_len);
        if output(&["-4", "-o", "addr", "show", "dev", &br]).is_ok_and(|s| s.contains(&want)) {
            ip(&["link", "set", &br, "up"])?;
            return crate::bridge_firewall::allow(&self.cfg);
        }
        let _ = ip(&["link", "del", &br]);
        self.check_no_overlap()?;
        ip(&["link", "add", &br, "type", "bridge"])?;
        ip(&[
            "addr",
            "add",
            &format!("{}/{}", self.cfg.bridge_addr(), self.cfg.prefix_len),
            "dev",
            &br,
        ])?;
        ip(&["link", "set", &br, "up"])?;
        tracing::info!(bridge = br, subnet = self.cfg.cidr(), "bridge created");
        crate::bridge_firewall::allow(&self.cfg)
    }

    /// Refuses a subnet that overlaps any route of the root namespace (any table) that is not
    /// on our own bridge.
    fn check_no_overlap(&self) -> anyhow::Result<()> {
        let routes = output(&["-4", "-o", "route", "show", "table", "all"])?;
        let ours = u32::from(self.cfg.subnet);
        for line in routes.lines() {
            let mut words = line.split_whitespace().peekable();
            if words.peek().is_some_and(|w| {
                [
                    "unicast",
                    "local",
                    "broadcast",
                    "multicast",
                    "anycast",
                    "blackhole",
                    "unreachable",
                    "prohibit",
                    "throw",
                    "nat",
                ]
                .contains(w)
            }) {
                words.next();
            }
            let Some(dest) = words.next() else { continue };
            if dest == "default" {
                continue;
            }
            let dev = line
                .split_whitespace()
                .skip_while(|w| *w != "dev")
                .nth(1)
                .unwrap_or_default();
            if dev == self.cfg.bridge() {
                continue;
            }
            let (addr, len) = match dest.split_once('/') {
                Some((a, l)) => (a, l.parse().unwrap_or(32)),
                None => (dest, 32u8),
            };
            let Ok(addr) = addr.parse::<Ipv4Addr>() else {
                continue;
            };
            let common = mask(len.min(self.cfg.prefix_len));
            if u32::from(addr) & common == ours & common {
                bail!(
                    "the lockbench subnet {} overlaps an existing route `{}`; choose another \
                     with LOCKBENCH_SUBNET=a.b.c.0/24",
                    self.cfg.cidr(),
                    line.trim()
                );
            }
        }
        Ok(())
    }

    fn remove_host(&self, host: &Host) {
        kill_all(&netns_pids(&host.netns));
        if host.exists() {
            let _ = ip(&["netns", "del", &host.netns]);
        }
        if link_exists(&host.netns) {
            let _ = ip(&["link", "del", &host.netns]);
        }
    }

    /// Removes every client host: SIGKILLs the processes inside, deletes the namespaces (their
    /// firewall rules go with them). Returns the hosts removed.
    pub fn remove_client_hosts(&self) -> anyhow::Result<Vec<String>> {
        let _lock = self.lock()?;
        let hosts = self.client_hosts();
        for h in &hosts {
            self.remove_host(h);
        }
        Ok(hosts.into_iter().map(|h| h.name).collect())
    }

    /// Removes everything this network owns: SIGKILLs every process in its namespaces, deletes
    /// the namespaces, leftover veths, the bridge and its rule in the root namespace's
    /// `FORWARD` chain. Idempotent. Returns what it removed.
    pub fn teardown(&self) -> anyhow::Result<Vec<String>> {
        let _lock = self.lock()?;
        let mut removed = Vec::new();
        for ns in list_netns().into_iter().filter(|n| self.cfg.owns(n)) {
            kill_all(&netns_pids(&ns));
            let _ = ip(&["netns", "del", &ns]);
            removed.push(ns);
        }
        for link in list_links().into_iter().filter(|l| self.cfg.owns(l)) {
            let _ = ip(&["link", "del", &link]);
            removed.push(link);
        }
        if crate::bridge_firewall::remove(&self.cfg)? > 0 {
            removed.push(format!("FORWARD rule for {}", self.cfg.bridge()));
        }
        let _ = std::fs::remove_file(self.owner_file());
        let left: Vec<String> = list_netns()
            .into_iter()
            .chain(list_links())
            .filter(|n| self.cfg.owns(n))
            .collect();
        if !left.is_empty() {
            bail!("could not remove {}", left.join(", "));
        }
        Ok(removed)
    }

    /// Names of every namespace and link this network owns that exist now, and its root
    /// `FORWARD` rule if present (empty after [`Network::teardown`]).
    pub fn leftovers(&self) -> Vec<String> {
        let mut left: Vec<String> = list_netns()
            .into_iter()
            .chain(list_links())
            .filter(|n| self.cfg.owns(n))
            .collect();
        if crate::bridge_firewall::present(&self.cfg) {
            left.push(format!("FORWARD rule for {}", self.cfg.bridge()));
        }
        left
    }

    /// Checks within a few seconds that `from` reaches `to` over the bridge (a TCP connection
    /// between the two namespaces); the error names the likely cause (a root firewall that
    /// drops bridged traffic) and the fix.
    pub fn check_forwarding(&self, from: &Host, to: &Host) -> anyhow::Result<()> {
        crate::bridge_firewall::check_forwarding(&self.cfg, from, to)
    }
}

/// Checks that this process can build the network: root, `ip` and `iptables` work, a
/// namespace can be created and its firewall listed.
pub(crate) fn probe(cfg: &NetConfig) -> anyhow::Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!("not root");
    }
    if link_exists(&cfg.bridge()) {
        return Ok(()); // built before, by a process that could
    }
    let ns = format!("{}probe-{}", cfg.prefix, std::process::id());
    ip(&["netns", "add", &ns]).context("`ip netns add` failed")?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns, "iptables", "-w", "-S", "INPUT"]);
    let listed = run(cmd);
    let _ = ip(&["netns", "del", &ns]);
    listed.context("iptables does not work inside a namespace")?;
    Ok(())
}

/// A namespace's file: `/run/netns/<name>`, or the path itself when given one.
fn netns_path(ns: &str) -> PathBuf {
    Path::new("/run/netns").join(ns)
}

fn list_netns() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn list_links() -> Vec<String> {
    std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// Pids of the processes in a namespace (empty if it does not exist).
fn netns_pids(ns: &str) -> Vec<u32> {
    if !netns_path(ns).exists() {
        return Vec::new();
    }
    output(&["netns", "pids", ns])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// SIGKILLs processes (they are inside one of our namespaces, hence ours) and waits for them.
pub(crate) fn kill_all(pids: &[u32]) {
    for &pid in pids {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
    let start = Instant::now();
    while pids.iter().any(|&p| crate::process::is_alive(p))
        && start.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run(mut cmd: Command) -> anyhow::Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ip(args: &[&str]) -> anyhow::Result<String> {
    let mut cmd = Command::new("ip");
    cmd.args(args);
    run(cmd)
}

fn output(args: &[&str]) -> anyhow::Result<String> {
    ip(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_addresses() {
        let cfg = NetConfig::default();
        assert_eq!(cfg.bridge(), "lb-br0");
        assert_eq!(cfg.bridge_addr(), Ipv4Addr::new(10, 77, 0, 1));
        assert!(cfg.owns("lb-zk1") && cfg.owns("lb-client12") && cfg.owns("lb-br0"));
        assert!(cfg.owns("lb-probe-123"));
        // Another network's names are not ours, though they share the `lb-` prefix.
        assert!(!cfg.owns("lb-t1-zk1") && !cfg.owns("lb-clientx") && !cfg.owns("eth0"));
        let t = NetConfig::new("lb-t1-", "10.77.201.0/24").unwrap();
        assert_eq!(t.netns_name("redlock5"), "lb-t1-redlock5");
        assert!(t.netns_name("redlock5").len() <= 15);
        assert!(NetConfig::new("xx-", "10.77.0.0/24").is_err());
        assert!(NetConfig::new("lb-", "10.77.0.1/24").is_err());
    }
}
