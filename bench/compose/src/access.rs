//! How this process gets inside the compose containers: [`Access::Enter`] their network
//! namespaces from the machine (`setns`, root's fast path), or [`Access::Exec`] through the
//! Docker API (`docker exec`, `docker kill --signal`): what a user in the `docker` group, or
//! lockbench in a container of its own with the Docker socket mounted, can do.
//!
//! Why decided by capability, once: the same run must not mix the two (a rule added one way
//! is flushed the same way), and which one works depends on who runs lockbench and where, not
//! on a setting a user should have to know. A running server container's namespace is tried
//! (`/proc/<pid>/ns/net`, opened and entered on a thread of its own): if that works this
//! process is root on the machine, and it enters; otherwise it goes through Docker.
//! `LOCKBENCH_COMPOSE_ACCESS=exec` (or `enter`) forces a way, for tests and for comparing the
//! two. The run's first lines say which ([`Access::describe`]).

use crate::file::container;
use crate::site::inspect;
use lockbench_cluster::SERVERS;
use std::sync::Mutex;

/// The environment variable that forces a way in.
pub const ENV: &str = "LOCKBENCH_COMPOSE_ACCESS";

/// How faults get inside the containers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Enter the containers' network namespaces from here (`nsenter`, `setns`; root), and
    /// signal client containers' workers by their pids.
    Enter,
    /// `docker exec` inside the containers (iptables and probes there; the containers have
    /// `NET_ADMIN`), `docker kill --signal` to client containers' workers.
    Exec,
}

impl Access {
    /// For the run's first lines.
    pub fn describe(self) -> &'static str {
        match self {
            Access::Enter => {
                "compose faults enter the containers' namespaces from this machine (nsenter: \
                 root's fast path)"
            }
            Access::Exec => {
                "compose faults go through the Docker API (docker pause/kill/start, iptables \
                 and probes by docker exec inside the containers): no host root needed"
            }
        }
    }
}

/// The way decided, once a server container was there to try.
static DECIDED: Mutex<Option<Access>> = Mutex::new(None);

/// How this process gets inside the compose containers (decided on the first call that finds
/// a server container running, then kept; [`Access::Exec`] while none runs).
pub fn access() -> Access {
    let mut decided = DECIDED.lock().expect("not poisoned");
    if let Some(a) = *decided {
        return a;
    }
    match std::env::var(ENV).as_deref() {
        Ok("exec") => return *decided.insert(Access::Exec),
        Ok("enter") | Ok("nsenter") => return *decided.insert(Access::Enter),
        _ => {}
    }
    let pid = SERVERS.iter().find_map(|s| {
        inspect(s.name, "{{.State.Pid}}")?
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|p| *p > 0)
    });
    match pid {
        Some(pid) => {
            let way = if lockbench_cluster::entry::can_enter(&format!("/proc/{pid}/ns/net")) {
                Access::Enter
            } else {
                Access::Exec
            };
            *decided.insert(way)
        }
        None => Access::Exec,
    }
}

/// The container of `name` (server or client host) as [`lockbench_cluster::Host::exec`] wants
/// it on the [`Access::Exec`] way, `None` on the other.
pub fn exec_container(name: &str) -> Option<String> {
    (access() == Access::Exec).then(|| container(name))
}
