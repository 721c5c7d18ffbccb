//! [`MariaBackend`]: one named-lock recipe bound to the `mariadb` servers.

use crate::client::MariaClient;
use crate::knobs::MariadbKnobs;
use crate::observe::CLIENT_NAME;
use crate::recipe::MariaRecipe;
use crate::session::{Connector, Login};
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, BackendInfo, ClientId, Endpoints, RunClock, ServerCounters, ServerSink, WakeupTally,
    Wakeups,
};
use std::sync::Arc;

/// A named-lock recipe on the servers of the `mariadb` endpoints group (see
/// [`crate::recipe`] for the two recipes).
#[derive(Debug)]
pub struct MariaBackend {
    recipe: MariaRecipe,
    knobs: Arc<MariadbKnobs>,
    connector: Connector,
    seed: u64,
    tally: WakeupTally,
}

impl MariaBackend {
    /// `recipe` on `endpoints.get("mariadb")` (every address, the writable one used), drawing
    /// poll jitter from `seed`.
    pub fn new(
        recipe: MariaRecipe,
        endpoints: &Endpoints,
        knobs: &MariadbKnobs,
        seed: u64,
    ) -> Result<MariaBackend, BackendError> {
        use lockbench_core::knobs::KnobTable;
        knobs
            .validate()
            .map_err(|e| BackendError::Config(e.to_string()))?;
        let addresses = endpoints.get(crate::MARIADB).to_vec();
        if addresses.is_empty() {
            return Err(BackendError::Config(
                "no `mariadb` endpoints: list the primary and the replica as \
                 mariadb = [\"host:3306\", ...]"
                    .into(),
            ));
        }
        let knobs = Arc::new(knobs.clone());
        let login = Login::new(crate::MARIADB, endpoints.connection(crate::MARIADB))?;
        Ok(MariaBackend {
            recipe,
            connector: Connector::new(&addresses, knobs.clone(), login, "lockbench"),
            knobs,
            seed,
            tally: WakeupTally::default(),
        })
    }

    /// Which recipe.
    pub fn recipe(&self) -> MariaRecipe {
        self.recipe
    }
}

/// A client's name in its session's `@lockbench_client`, which the observer parses back.
pub fn client_name(client: ClientId) -> String {
    format!("{CLIENT_NAME}{}", client.0)
}

impl Backend for MariaBackend {
    type Client = MariaClient;

    fn info(&self) -> BackendInfo {
        let k = &self.knobs;
        let fencing = "NEXTVAL of one sequence (lockbench.fence, cached in blocks of 1000), \
             drawn in the same statement as the grant and only when granted: greater than every \
             token handed out before it. The sequence's blocks are replicated asynchronously, so \
             after a promotion the new primary may hand out a token an earlier grant already \
             had (the fencing checker shows it); the lock itself is not replicated at all.";
        BackendInfo {
            backend: self.recipe.kind(),
            waits_by: self.recipe.waits_by(k),
            fencing: fencing.into(),
            knobs: vec![
                (
                    "held_by".into(),
                    "the session (released by RELEASE_LOCK or the session's end)".into(),
                ),
                (
                    "renew".into(),
                    "asks IS_USED_LOCK for its own session (extends nothing; resets the \
                     session's idle time)"
                        .into(),
                ),
                ("lock_timeout".into(), format!("{:?}", k.lock_timeout)),
                ("poll_interval".into(), format!("{:?}", k.poll_interval)),
                ("poll_jitter".into(), format!("{:?}", k.poll_jitter)),
                (
                    "response_timeout".into(),
                    format!("{:?}", k.response_timeout),
                ),
                ("connect_timeout".into(), format!("{:?}", k.connect_timeout)),
                (
                    "wait_timeout".into(),
                    format!(
                        "{:?} (a silent holder's lock lives this long after its last statement)",
                        k.wait_timeout
                    ),
                ),
                ("prefix".into(), k.prefix.clone()),
                ("servers".into(), self.connector.addresses.join(",")),
            ],
        }
    }

    async fn connect(&self, client: ClientId) -> Result<MariaClient, BackendError> {
        let connector = Arc::new(self.connector.renamed(&client_name(client)));
        let seed = self.seed ^ (u64::from(client.0) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut c = MariaClient::new(
            self.recipe,
            self.knobs.clone(),
            connector,
            seed,
            self.tally.clone(),
        );
        c.connect_now().await?;
        Ok(c)
    }

    /// `mariadb-try-lock` counts its poll timers as wake-ups. `mariadb-get-lock` waits inside
    /// the server, which wakes the next waiter itself: nothing a client can count.
    fn wakeups(&self) -> Option<Wakeups> {
        (self.recipe == MariaRecipe::TryLock).then(|| self.tally.read())
    }

    async fn server_counters(&self) -> Result<ServerCounters, String> {
        let connector = self.connector.renamed("lockbench-counters");
        crate::counters::read(&connector, &self.knobs.tag(), self.knobs.response_timeout).await
    }

    async fn observe_server(
        &self,
        clock: RunClock,
        keys: u32,
        sink: ServerSink,
    ) -> Result<(), String> {
        let connector = self.connector.renamed("lockbench-observer");
        crate::observe::observe(connector, &self.knobs, keys, clock, sink).await
    }
}
