//! The `clock-jump` fault: each target server's clock jumped forward the way its system says
//! ([`System::clock_jump`](lockbench_core::System::clock_jump): Redis emulates it by shortening
//! every key's TTL), through the probes of [`crate::probe`], which reach a server from inside
//! its host. A server whose system offers no jump (or a client host) is not jumped: the fault
//! is recorded as not applied, with what the systems that offer one say.

use crate::probe::Probes;
use crate::server_nemesis::ServerNemesis;
use crate::site::Site;
use lockbench_core::{FaultEvent, FaultKind, FaultPhase, RunClock, Targets};
use std::time::Duration;

/// The kind its events are recorded as.
const CLOCK_JUMP: FaultKind = FaultKind::ClockJump;

impl<S: Site> ServerNemesis<S> {
    /// Jumps every target's clock forward by `by`: one `start` event (a jump is instantaneous).
    pub(crate) async fn clock_jump(
        &mut self,
        t: &Targets,
        by: Duration,
        clock: &RunClock,
    ) -> FaultEvent {
        let names = match self.resolve(t).await {
            Ok(n) => n,
            Err(e) => {
                return FaultEvent::not_applied(clock, CLOCK_JUMP, vec![], format!("{e:#}"));
            }
        };
        let jump = self.servers.first().and_then(|s| s.system.clock_jump());
        let access = Probes(&self.site);
        let mut parts = Vec::new();
        let mut ok = true;
        for name in &names {
            let (Some(spec), Some(jump)) = (self.spec(name), jump) else {
                return FaultEvent::not_applied(
                    clock,
                    CLOCK_JUMP,
                    names.clone(),
                    format!("{name}: {}", jumps_elsewhere()),
                );
            };
            match jump.jump(&access, spec, by).await {
                Ok(done) => parts.push(format!("{name}: {done}")),
                Err(e) => {
                    ok = false;
                    parts.push(format!("{name}: FAILED {e}"));
                }
            }
        }
        let Some(jump) = jump else {
            return FaultEvent::not_applied(clock, CLOCK_JUMP, names, jumps_elsewhere());
        };
        let note = format!("{}: {}", jump.how(by), parts.join("; "));
        FaultEvent::now(clock, CLOCK_JUMP, FaultPhase::Start, names, note, ok)
    }
}

/// What the systems that offer a clock jump say of a server they cannot jump.
fn jumps_elsewhere() -> String {
    let offers: Vec<&str> = lockbench_registry::SYSTEMS
        .iter()
        .filter_map(|s| s.clock_jump())
        .map(|j| j.elsewhere())
        .collect();
    if offers.is_empty() {
        "no system offers a clock jump".into()
    } else {
        offers.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use crate::nowhere::Nowhere;
    use crate::{Nemesis, ServerNemesis};
    use lockbench_cluster::{SERVERS, Topology};
    use lockbench_core::{Fault, RunClock, Targets};
    use rand::SeedableRng;
    use std::time::Duration;

    /// A server whose system offers no jump is refused in the words of the systems that do.
    #[tokio::test]
    async fn a_system_without_a_jump_is_not_jumped() {
        let zk = SERVERS
            .iter()
            .copied()
            .filter(|s| s.group.name() == "zookeeper");
        let rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut n = ServerNemesis::on(Nowhere(Topology::Loopback), zk.collect(), rng);
        let jump = Fault::ClockJump {
            targets: Targets::Nodes(vec!["zk2".into()]),
            by: Duration::from_secs(1),
        };
        let ev = n.apply(&jump, &RunClock::start()).await;
        assert!(!ev[0].applied && ev[0].fault == lockbench_core::FaultKind::ClockJump);
        assert_eq!(ev[0].targets, ["zk2"]);
        assert_eq!(
            ev[0].note,
            "zk2: the clock-jump emulation exists for Redis servers only"
        );
    }
}
