//! Where a run's worker processes come from (`[workers]`, or `lockbench run --workers`).
//!
//! Why a setting of its own: `workload.processes` says *whether* clients run in worker
//! processes; this says *who starts them*. `local` is the coordinator's own children (one per
//! slot, in the managed cluster's client hosts or compose's client containers, over pipes).
//! `dial` and `swarm` start `count` workers that dial in to the coordinator over TCP with the
//! run's secret (`lockbench worker --coordinator`): `dial` as child processes on this
//! machine (the transport without an orchestrator), `swarm` as the tasks of a Docker Swarm
//! service. The client slots are spread over the `count` workers (slot `s` on worker
//! `s % count`), so a few workers can carry many clients.
//!
//! ```toml
//! [workers]
//! launcher = "swarm"   # "local" (default) | "dial" | "swarm"
//! count = 4
//! ```
//!
//! `--workers swarm:4` is the same as `--set workers.launcher=swarm --set workers.count=4`.
//!
//! `external` starts nothing: it waits for `count` workers someone else started (a Kubernetes
//! Job from `lockbench k8s-manifests`, workers on other machines started by hand), listening
//! at `listen` (`--listen`, default `0.0.0.0:7450`) with the secret in the coordinator's own
//! `LOCKBENCH_WORKER_SECRET`; they must be named `client1` ... `client<count>`.

use serde::{Deserialize, Serialize};

/// Who starts the worker processes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Launcher {
    /// The coordinator's own child processes, one per slot, over pipes (the default).
    #[default]
    Local,
    /// Child processes on this machine that dial in over TCP.
    Dial,
    /// Tasks of a Docker Swarm service that dial in over TCP.
    Swarm,
    /// Workers someone else started, which dial in over TCP.
    External,
}

impl Launcher {
    /// Its name in the scenario (`local`, `dial`, `swarm`).
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Local => "local",
            Launcher::Dial => "dial",
            Launcher::Swarm => "swarm",
            Launcher::External => "external",
        }
    }
}

/// The `[workers]` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkersSpec {
    /// Who starts them.
    #[serde(default)]
    pub launcher: Launcher,
    /// How many workers (ignored by `local`, which starts one per slot).
    #[serde(default = "one")]
    pub count: u32,
    /// Where the coordinator listens for them (`external`; the others pick a free port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<std::net::SocketAddr>,
}

/// Where an `external` run listens unless `listen` says otherwise.
pub const DEFAULT_LISTEN: &str = "0.0.0.0:7450";

fn one() -> u32 {
    1
}

impl WorkersSpec {
    /// `true` for workers that dial in (`dial`, `swarm`).
    pub fn dials_in(&self) -> bool {
        self.launcher != Launcher::Local
    }

    /// Parses `--workers`'s value: `dial:N`, `swarm:N`, `external:N` or `local`.
    pub fn parse(text: &str) -> Result<WorkersSpec, String> {
        let hint = "expected dial:N, swarm:N, external:N or local (e.g. --workers swarm:4)";
        let (name, count) = match text.split_once(':') {
            Some((n, c)) => (
                n,
                c.parse::<u32>()
                    .map_err(|_| format!("--workers {text}: `{c}` is not a count; {hint}"))?,
            ),
            None => (text, 1),
        };
        let launcher = match name {
            "local" => Launcher::Local,
            "dial" => Launcher::Dial,
            "swarm" => Launcher::Swarm,
            "external" => Launcher::External,
            other => return Err(format!("--workers {text}: no launcher `{other}`; {hint}")),
        };
        if count == 0 {
            return Err(format!("--workers {text}: the count must be at least 1"));
        }
        Ok(WorkersSpec {
            launcher,
            count,
            listen: None,
        })
    }

    /// The `--set` overrides that say the same.
    pub fn overrides(&self) -> Vec<String> {
        vec![
            format!("workers.launcher=\"{}\"", self.launcher.name()),
            format!("workers.count={}", self.count),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_parses_into_the_table_it_stands_for() {
        let s = WorkersSpec::parse("swarm:4").unwrap();
        assert_eq!(
            s,
            WorkersSpec {
                launcher: Launcher::Swarm,
                count: 4,
                listen: None,
            }
        );
        assert!(s.dials_in());
        assert_eq!(
            s.overrides(),
            ["workers.launcher=\"swarm\"", "workers.count=4"]
        );
        assert!(!WorkersSpec::parse("local").unwrap().dials_in());
        assert!(WorkersSpec::parse("external:3").unwrap().dials_in());
        for bad in ["swarm:0", "swarm:x", "k8s:2"] {
            let e = WorkersSpec::parse(bad).unwrap_err();
            assert!(e.contains("--workers"), "{e}");
        }
    }
}
