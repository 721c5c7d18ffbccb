//! `docker-compose.yml`, `compose/official-images.yml` and `compose/endpoints.toml`, generated
//! from the managed cluster's own data, so the two ways to run the servers cannot drift.
//!
//! Every service is one of [`lockbench_cluster::SERVERS`] (same name, container
//! `lockbench-<name>`), started by the same [`Launch`] managed mode uses: the container's
//! command writes the launch's files with here-documents and `exec`s its program. The compose
//! network gives each container the address its managed namespace has, on the compose subnet
//! ([`SUBNET`]: same last octet, the systems' standard ports), so the Sentinels name a primary
//! the host can reach, and lockbench reaches every server at its container address. Each
//! server's client port is also published on 127.0.0.1 at its managed loopback port
//! ([`published_port`]), the way in where the host cannot route to the subnet (Docker
//! Desktop; see [`mod@crate::route`]).
//!
//! The committed files are checked against this generator by `tests/generated.rs`
//! (`UPDATE_EXPECT=1` rewrites them).

use crate::route::published_port;
use lockbench_cluster::{NetConfig, SERVERS, ServerSpec, Topology};
use lockbench_core::Endpoints;
use lockbench_core::launch::{File, Launch, Secure, Site};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

/// The compose network's subnet; containers get `.<octet>` as in the managed netns topology.
pub const SUBNET: &str = "10.78.0.0/24";
/// The Docker network of docker-compose.yml (`networks.lockbench.name`).
pub const NETWORK: &str = "lockbench";
/// The image docker-compose.yml runs unless `LOCKBENCH_SERVERS_IMAGE` says otherwise
/// (`scripts/build-images` makes it; `up` builds it from [`BUILD_CONTEXT`] when it is missing).
pub const IMAGE: &str = "lockbench/servers:local";
/// The directory of the servers' Dockerfile, the image's one definition (relative to the
/// compose file, which is at the repository's top).
pub const BUILD_CONTEXT: &str = "compose/servers";
/// lockbench's own image (the [`LOCKBENCH`] service runs it; `scripts/build-images` makes it
/// from the host's build, `build` compiles it where a registry is reachable).
pub const LOCKBENCH_IMAGE: &str = "lockbench/lockbench:local";
/// The service that runs lockbench itself in a container on the compose network, in the
/// profile of the same name (`up` does not start it; `run --rm lockbench ...` does).
pub const LOCKBENCH: &str = "lockbench";
/// The one-shot service that starts only once every server is healthy, so a plain `up -d`
/// returns when the cluster is ready (Compose 1.29 has no `--wait`).
pub const READY: &str = "ready";
/// Where a server's directory is inside its container (`/lockbench/<name>`), on the
/// `lockbench-data` volume, so a killed and restarted container keeps its data as a managed
/// server does.
const ROOT: &str = "/lockbench";
/// Seconds between healthchecks: each is a `docker exec`, which costs CPU on a small machine.
const HEALTH_INTERVAL_S: u32 = 2;

/// The compose cluster's layout: the managed netns topology's octets and ports on [`SUBNET`].
pub fn topology() -> Topology {
    Topology::Netns(NetConfig::new("lb-", SUBNET).expect("SUBNET is a valid /24"))
}

/// Where lockbench reaches the compose cluster's servers.
pub fn endpoints() -> Endpoints {
    lockbench_cluster::endpoints(&topology())
}

/// The container of a server (`zk1` -> `lockbench-zk1`).
pub fn container(server: &str) -> String {
    format!("lockbench-{server}")
}

/// A server's container address on the compose network.
pub fn address(spec: &ServerSpec) -> IpAddr {
    topology().ip(spec)
}

/// How `spec` starts inside its container.
pub fn launch(spec: &ServerSpec) -> Launch {
    launch_with(spec, None)
}

/// How `spec` starts inside its container, secured with `secure` (its files' paths are the
/// container's) on the secure compose cluster ([`crate::secure`]), plain with `None`.
pub fn launch_with(spec: &ServerSpec, secure: Option<&Secure>) -> Launch {
    let topology = topology();
    spec.system.launch(
        spec,
        &Site {
            topology: &topology,
            bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            root: PathBuf::from(ROOT).join(spec.name),
            log: None,
            cluster_token: "lockbench-compose".into(),
            secure,
        },
    )
}

/// The healthcheck command of a server: what "a lock client can use it" means, asked inside
/// the container (ZooKeeper serving as leader or follower, etcd healthy, Redis answering
/// `PING`, a Sentinel naming a primary).
pub(crate) fn healthcheck(spec: &ServerSpec) -> Vec<String> {
    spec.system
        .compose_healthcheck(topology().client_port(spec))
}

/// What a service waits for before it starts: the failover pair's replica its primary, the
/// Sentinels the pair (they monitor the primary from their first second).
fn depends_on(spec: &ServerSpec) -> Vec<&'static str> {
    spec.system.depends_on(spec)
}

/// `$` escaped for Compose's variable interpolation.
fn compose_escape(s: &str) -> String {
    s.replace('$', "$$")
}

/// A quoted YAML scalar (double quotes, JSON escapes are valid YAML).
pub(crate) fn quoted(s: &str) -> String {
    serde_json::to_string(&compose_escape(s)).expect("string serializes")
}

/// A word for `sh`: as is when it is plain, else in single quotes.
pub(crate) fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The shell script a container runs: the launch's directories and files, then `exec_line`.
pub fn script(launch: &Launch, exec_line: &str) -> String {
    script_copying(launch, exec_line, |_| None)
}

/// [`script`], where a file for which `copied` names a path inside the container is copied
/// from there instead of written from the script's text (the secure profile's files that
/// hold a password or its hash: [`crate::secure`]); then the script starts with `umask 077`,
/// so the copies and what the server writes are its owner's alone, as in managed mode.
pub fn script_copying(
    launch: &Launch,
    exec_line: &str,
    copied: impl Fn(&File) -> Option<String>,
) -> String {
    let mut s = String::from("set -e\n");
    if launch.files.iter().any(|f| copied(f).is_some()) {
        s.push_str("umask 077\n");
    }
    let dirs: Vec<String> = launch
        .dirs
        .iter()
        .map(|d| shell_word(&d.display().to_string()))
        .collect();
    if !dirs.is_empty() {
        let _ = writeln!(s, "mkdir -p {}", dirs.join(" "));
    }
    for r in &launch.remove {
        let _ = writeln!(s, "rm -f {}", shell_word(&r.display().to_string()));
    }
    for f in &launch.files {
        let path = shell_word(&f.path.display().to_string());
        let guard = if f.only_if_absent {
            format!("[ -e {path} ] || ")
        } else {
            String::new()
        };
        match copied(f) {
            Some(from) => {
                let _ = writeln!(s, "{guard}cp {} {path}", shell_word(&from));
            }
            None => {
                let _ = writeln!(s, "{guard}cat > {path} <<'EOF'\n{}EOF", f.contents);
            }
        }
    }
    s.push_str(exec_line);
    s.push('\n');
    s
}

/// `exec program args...`.
pub(crate) fn exec_line(launch: &Launch) -> String {
    let mut words = vec!["exec".to_string(), launch.program.to_string()];
    words.extend(launch.args.iter().map(|a| shell_word(a)));
    words.join(" ")
}

/// `command: [sh, -c, <script>]` at service level.
pub(crate) fn command(out: &mut String, script: &str) {
    out.push_str("    command:\n      - sh\n      - -c\n");
    let pad = "      - |\n";
    out.push_str(pad);
    for line in compose_escape(script).lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "        {line}");
        }
    }
}

/// The published ports per system, for the file's header (`zookeeper 12181/12182/12183, ...`).
fn published_summary() -> String {
    let mut systems: Vec<(&str, Vec<String>)> = Vec::new();
    for spec in SERVERS.iter() {
        let port = published_port(spec).to_string();
        match systems.iter_mut().find(|(n, _)| *n == spec.system.name()) {
            Some((_, ports)) => ports.push(port),
            None => systems.push((spec.system.name(), vec![port])),
        }
    }
    let parts: Vec<String> = systems
        .into_iter()
        .map(|(n, ports)| format!("{n} {}", ports.join("/")))
        .collect();
    parts.join(", ")
}

/// The whole `docker-compose.yml`.
pub fn compose_file() -> String {
    let published = published_summary();
    let mut out = String::new();
    let _ = write!(
        out,
        "\
# GENERATED by lockbench-compose from the managed cluster's own settings (bench/cluster); do not
# edit: change the Rust side and run `UPDATE_EXPECT=1 cargo test -p lockbench-compose --test generated`.
#
# The Docker flow: the servers of lockbench's managed cluster, with the same settings, in
# containers of one image, built from {BUILD_CONTEXT}/Dockerfile (Debian bookworm and the
# Debian packages managed mode runs). Every container has its managed host's address on the
# compose network (subnet {SUBNET}, same last octet, standard ports), which the host reaches
# directly on Linux: these are the endpoints of `--cluster compose` (compose/endpoints.toml).
# Every server's client port (with any port lockbench's probes reach, such as a monitoring
# port, at the same offset) is also published on 127.0.0.1 at its managed loopback port
# ({published}):
# where the host cannot route to the subnet (Docker Desktop), lockbench uses those and says so
# on its first line; through them there is no redis-sentinel, no client container and no
# server or link fault (see docs/docker.md).
#
#   docker compose up -d --wait             # Compose 1.29: docker-compose up -d
#   cargo bench                             # finds the running compose cluster
#   docker compose down -v                  # Compose 1.29: docker-compose down -v
#
# `up` builds the image when it is missing (`build:` below) and uses it as it is when it
# exists; with no registry for the Dockerfile's base, scripts/build-images builds it first.
# `up -d` returns once every server is healthy, also on Compose 1.29, which has no --wait: the
# `{READY}` service starts only then. Container names are fixed (lockbench-<server>): the
# compose nemesis pauses, kills and disconnects them by name. Official images instead of the
# local one: `-f docker-compose.yml -f compose/official-images.yml` (see docs/docker.md).

x-server: &server
  image: ${{LOCKBENCH_SERVERS_IMAGE:-{IMAGE}}}
  build:
    context: {BUILD_CONTEXT}
  restart: \"no\"
  # Partitions and packet loss are iptables rules inside the containers, added with
  # `docker exec` when lockbench is not root on the machine.
  cap_add:
    - NET_ADMIN
  volumes:
    - lockbench-data:{ROOT}
x-health: &health
  interval: {HEALTH_INTERVAL_S}s
  timeout: 5s
  retries: 60

services:
"
    );
    for spec in SERVERS.iter() {
        let launch = launch(spec);
        let _ = writeln!(out, "  {}:", spec.name);
        out.push_str("    <<: *server\n");
        let _ = writeln!(out, "    container_name: {}", container(spec.name));
        let _ = writeln!(out, "    hostname: {}", spec.name);
        let _ = writeln!(
            out,
            "    networks:\n      {NETWORK}:\n        ipv4_address: {}",
            address(spec)
        );
        let _ = writeln!(
            out,
            "    ports:\n      - \"127.0.0.1:{}:{}\"",
            published_port(spec),
            topology().client_port(spec)
        );
        for offset in spec.system.probe_port_offsets() {
            let _ = writeln!(
                out,
                "      - \"127.0.0.1:{}:{}\"",
                published_port(spec) + offset,
                topology().client_port(spec) + offset
            );
        }
        let deps = depends_on(spec);
        if !deps.is_empty() {
            out.push_str("    depends_on:\n");
            for d in deps {
                let _ = writeln!(out, "      {d}:\n        condition: service_healthy");
            }
        }
        let test: Vec<String> = healthcheck(spec).iter().map(|w| quoted(w)).collect();
        let _ = writeln!(
            out,
            "    healthcheck:\n      <<: *health\n      test: [{}]",
            test.join(", ")
        );
        command(&mut out, &script(&launch, &exec_line(&launch)));
    }
    let _ = writeln!(
        out,
        "  # Starts once every server is healthy, so `up -d` waits for the whole cluster.\n  {READY}:"
    );
    out.push_str("    <<: *server\n");
    let _ = writeln!(out, "    container_name: {}", container(READY));
    out.push_str("    volumes: []\n    network_mode: none\n    stop_signal: SIGKILL\n");
    out.push_str("    command: [\"sleep\", \"infinity\"]\n    depends_on:\n");
    for spec in SERVERS.iter() {
        let _ = writeln!(
            out,
            "      {}:\n        condition: service_healthy",
            spec.name
        );
    }
    lockbench_service(&mut out);
    let _ = write!(
        out,
        "
networks:
  {NETWORK}:
    name: {NETWORK}
    ipam:
      config:
        - subnet: {SUBNET}

volumes:
  lockbench-data:
    name: lockbench-data
"
    );
    out
}

/// The `lockbench` service: lockbench in a container on the compose network, the Docker socket
/// mounted for its faults (which then go through `docker exec`, [`crate::access`]) and its
/// client containers (this same image, [`crate::clients::BINARY_ENV`]), results in the
/// repository's `results/`.
fn lockbench_service(out: &mut String) {
    let _ = write!(
        out,
        "  # lockbench itself on the compose network, with nothing on the machine but Docker:
  #   docker compose run --rm {LOCKBENCH} run chaos-quick   # 1.29: docker-compose run --rm ...
  # The Docker socket is for its faults (docker exec, pause, kill) and client containers;
  # results land in ./results (owned by root: the container runs as root). Its own profile,
  # so `up` does not start it; `run` starts the servers first when they are not up.
  {LOCKBENCH}:
    image: ${{LOCKBENCH_IMAGE:-{LOCKBENCH_IMAGE}}}
    build:
      context: .
      dockerfile: compose/lockbench/Dockerfile
      target: lockbench
    profiles:
      - {LOCKBENCH}
    init: true
    networks:
      - {NETWORK}
    environment:
      LOCKBENCH_CLUSTER: compose
      LOCKBENCH_CLIENT_IMAGE: ${{LOCKBENCH_IMAGE:-{LOCKBENCH_IMAGE}}}
      {binary}: in-image
    volumes:
      - /var/run/docker.sock:/var/run/docker.sock
      - ./results:/lockbench/results
    depends_on:
      - {READY}
",
        binary = crate::clients::BINARY_ENV,
    );
}

/// `compose/official-images.yml`: the same services on the official images. A service's
/// command differs only where its system says the official image starts it otherwise
/// ([`System::official_image_launch`](lockbench_core::System::official_image_launch):
/// ZooKeeper's, whose jars are elsewhere): the same files, then that program.
pub fn official_override() -> String {
    let mut out = String::from(
        "\
# GENERATED by lockbench-compose (see docker-compose.yml); do not edit.
# The official images instead of the servers' image (compose/servers), for machines with a
# registry:
#   docker compose -f docker-compose.yml -f compose/official-images.yml up -d --wait
#   docker-compose -f docker-compose.yml -f compose/official-images.yml pull   # 1.29: pull first,
#   docker-compose -f docker-compose.yml -f compose/official-images.yml up -d  # else it builds
# Never `build` with this file: the services keep docker-compose.yml's `build:`, so a build
# would tag the servers' image with the official images' names.
services:
",
    );
    for spec in SERVERS.iter() {
        let _ = writeln!(
            out,
            "  {}:\n    image: {}",
            spec.name,
            spec.system.official_image()
        );
        if let Some(official) = spec.system.official_image_launch(&launch(spec)) {
            command(&mut out, &script(&official, &exec_line(&official)));
        }
    }
    let _ = writeln!(out, "  {READY}:\n    image: {}", most_used_official_image());
    out
}

/// The official image most services use, which the ready service (it only sleeps) runs on:
/// one the override pulls anyway. Any would do: every official image runs its services'
/// `sh -c` scripts, so it has a shell and `sleep`. The first in server order on a tie.
fn most_used_official_image() -> &'static str {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for spec in SERVERS.iter() {
        let image = spec.system.official_image();
        match counts.iter_mut().find(|(i, _)| *i == image) {
            Some((_, n)) => *n += 1,
            None => counts.push((image, 1)),
        }
    }
    let mut most = ("", 0);
    for c in counts {
        if c.1 > most.1 {
            most = c;
        }
    }
    most.0
}

/// `compose/endpoints.toml`.
pub fn endpoints_file() -> String {
    format!(
        "\
# GENERATED by lockbench-compose (see docker-compose.yml); do not edit.
# Where lockbench reaches docker-compose.yml's servers: their container addresses on the
# compose network ({SUBNET}). `--cluster compose` uses these (compiled in) when the host
# routes to them, else the ports published on 127.0.0.1 (the managed loopback ports);
# `--cluster external:compose/endpoints.toml` is the container addresses.
{}",
        endpoints().to_toml()
    )
}

/// Every generated file: path from the repository root, contents.
pub fn generated_files() -> [(&'static str, String); 4] {
    [
        ("docker-compose.yml", compose_file()),
        ("compose/official-images.yml", official_override()),
        ("compose/endpoints.toml", endpoints_file()),
        (crate::secure::OVERLAY, crate::secure::overlay()),
    ]
}
