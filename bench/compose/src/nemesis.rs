//! [`ComposeNemesis`]: executes [`plan`](crate::plan)s with `docker` and
//! keeps the open windows, so `resume`, `start`, `heal` and `heal_all` close exactly what was
//! opened (with the same verb and targets, as the availability analysis pairs them).

use crate::plan::{Action, plan};
use lockbench_chaos::{Group, Nemesis};
use lockbench_core::{Fault, FaultEvent, FaultPhase, RunClock};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

struct Window {
    verb: &'static str,
    targets: Vec<String>,
    undo: Vec<Action>,
}

/// Server faults on the docker-compose cluster, for one backend's group of servers.
pub struct ComposeNemesis {
    group: Group,
    rng: ChaCha8Rng,
    open: Vec<Window>,
    dry_run: Option<Vec<String>>,
}

impl ComposeNemesis {
    /// A nemesis for `group`'s containers; target choices draw from `seed`.
    pub fn new(group: Group, seed: u64) -> ComposeNemesis {
        ComposeNemesis {
            group,
            rng: ChaCha8Rng::seed_from_u64(seed),
            open: Vec::new(),
            dry_run: None,
        }
    }

    /// Like [`new`](Self::new), but records command lines instead of running them (every
    /// action "succeeds"); see [`executed`](Self::executed).
    pub fn dry_run(group: Group, seed: u64) -> ComposeNemesis {
        ComposeNemesis {
            dry_run: Some(Vec::new()),
            ..ComposeNemesis::new(group, seed)
        }
    }

    /// The command lines a dry-run nemesis would have run, in order.
    pub fn executed(&self) -> &[String] {
        self.dry_run.as_deref().unwrap_or_default()
    }

    /// Runs actions; `Err` names the first that failed.
    async fn run(&mut self, actions: &[Action]) -> Result<String, String> {
        let mut notes = Vec::new();
        for a in actions {
            let line = a.command_line();
            match &mut self.dry_run {
                Some(log) => log.push(line.clone()),
                None => execute(a).await.map_err(|e| format!("{line}: {e}"))?,
            }
            notes.push(line);
        }
        Ok(notes.join("; "))
    }

    async fn close(&mut self, clock: &RunClock, pick: impl Fn(&Window) -> bool) -> Vec<FaultEvent> {
        let (closing, keep): (Vec<Window>, Vec<Window>) = std::mem::take(&mut self.open)
            .into_iter()
            .partition(|w| pick(w));
        self.open = keep;
        let mut events = Vec::new();
        for w in closing {
            let (note, applied) = match self.run(&w.undo).await {
                Ok(n) => (n, true),
                Err(e) => (e, false),
            };
            events.push(FaultEvent::now(
                clock,
                w.verb,
                FaultPhase::Stop,
                w.targets,
                note,
                applied,
            ));
        }
        events
    }
}

impl Nemesis for ComposeNemesis {
    async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
        let verb = fault.verb();
        match fault {
            Fault::Heal => {
                return self
                    .close(clock, |w| {
                        matches!(w.verb, "partition" | "link-delay" | "link-blackhole")
                    })
                    .await;
            }
            Fault::Resume { .. } | Fault::Start { .. } => {
                let opened = if matches!(fault, Fault::Resume { .. }) {
                    "pause"
                } else {
                    "kill"
                };
                let planned = match plan(fault, self.group, &mut self.rng) {
                    Ok(p) => p,
                    Err(note) => {
                        return vec![FaultEvent::now(
                            clock,
                            opened,
                            FaultPhase::Stop,
                            Vec::new(),
                            note,
                            false,
                        )];
                    }
                };
                // Close the windows on these targets (their undo is this very action).
                let t = planned.targets.clone();
                let mut events = self
                    .close(clock, |w| {
                        w.verb == opened && w.targets.iter().all(|x| t.contains(x))
                    })
                    .await;
                if events.is_empty() {
                    let (note, applied) = match self.run(&planned.actions).await {
                        Ok(n) => (n, true),
                        Err(e) => (e, false),
                    };
                    events.push(FaultEvent::now(
                        clock,
                        opened,
                        FaultPhase::Stop,
                        planned.targets,
                        note,
                        applied,
                    ));
                }
                return events;
            }
            _ => {}
        }
        match plan(fault, self.group, &mut self.rng) {
            Err(note) => vec![FaultEvent::now(
                clock,
                verb,
                FaultPhase::Start,
                Vec::new(),
                note,
                false,
            )],
            Ok(p) => match self.run(&p.actions).await {
                Ok(note) => {
                    self.open.push(Window {
                        verb,
                        targets: p.targets.clone(),
                        undo: p.undo,
                    });
                    vec![FaultEvent::now(
                        clock,
                        verb,
                        FaultPhase::Start,
                        p.targets,
                        note,
                        true,
                    )]
                }
                Err(e) => {
                    // Undo whatever part did happen, then report the fault as not applied.
                    let _ = self.run(&p.undo).await;
                    vec![FaultEvent::now(
                        clock,
                        verb,
                        FaultPhase::Start,
                        p.targets,
                        e,
                        false,
                    )]
                }
            },
        }
    }

    async fn heal_all(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        self.close(clock, |_| true).await
    }
}

async fn execute(action: &Action) -> Result<(), String> {
    match action {
        Action::Docker(args) => {
            let out = tokio::process::Command::new("docker")
                .args(args)
                .output()
                .await
                .map_err(|e| format!("cannot run docker: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{PartitionSpec, Targets};

    fn nodes(n: &[&str]) -> Targets {
        Targets::Nodes(n.iter().map(|s| s.to_string()).collect())
    }

    #[tokio::test]
    async fn windows_open_and_close_with_the_same_verb_and_targets() {
        let clock = RunClock::start();
        let mut n = ComposeNemesis::dry_run(Group::Zookeeper, 1);
        let e = n
            .apply(
                &Fault::Pause {
                    targets: nodes(&["zk1"]),
                },
                &clock,
            )
            .await;
        assert_eq!(
            (e[0].fault.as_str(), e[0].phase, e[0].applied),
            ("pause", FaultPhase::Start, true)
        );
        let e = n
            .apply(
                &Fault::Resume {
                    targets: nodes(&["zk1"]),
                },
                &clock,
            )
            .await;
        assert_eq!(
            (e[0].fault.as_str(), e[0].phase, e[0].targets.clone()),
            ("pause", FaultPhase::Stop, vec!["zk1".to_string()])
        );
        n.apply(
            &Fault::Partition {
                split: PartitionSpec::Isolate(nodes(&["zk3"])),
            },
            &clock,
        )
        .await;
        n.apply(
            &Fault::Kill {
                targets: nodes(&["zk2"]),
            },
            &clock,
        )
        .await;
        let healed = n.apply(&Fault::Heal, &clock).await;
        assert_eq!(healed.len(), 1);
        assert_eq!(healed[0].fault, "partition");
        let rest = n.heal_all(&clock).await;
        assert_eq!((rest.len(), rest[0].fault.as_str()), (1, "kill"));
        assert_eq!(
            n.executed(),
            [
                "docker pause lockbench-zk1",
                "docker unpause lockbench-zk1",
                "docker network disconnect lockbench lockbench-zk3",
                "docker kill --signal KILL lockbench-zk2",
                "docker network connect --ip 10.78.0.13 lockbench lockbench-zk3",
                "docker start lockbench-zk2",
            ]
        );
    }

    #[tokio::test]
    async fn unsupported_faults_are_reported_not_applied() {
        let clock = RunClock::start();
        let mut n = ComposeNemesis::dry_run(Group::Etcd, 1);
        let e = n
            .apply(
                &Fault::Pause {
                    targets: Targets::Leader,
                },
                &clock,
            )
            .await;
        assert!(!e[0].applied && e[0].note.starts_with("compose mode:"));
        assert!(n.executed().is_empty());
    }
}
