//! [`PgBackend`]: one advisory-lock recipe bound to the `postgres` servers.

use crate::client::PgClient;
use crate::knobs::PostgresKnobs;
use crate::observe::CLIENT_NAME;
use crate::recipe::PgRecipe;
use crate::session::Connector;
use crate::sql::Statements;
use crate::tls::Security;
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, BackendInfo, ClientId, Endpoints, RunClock, ServerCounters, ServerSink, WakeupTally,
    Wakeups,
};
use std::sync::Arc;
use tokio::sync::OnceCell;

/// An advisory-lock recipe on the servers of the `postgres` endpoints group (see
/// [`crate::recipe`] for the three recipes).
#[derive(Debug)]
pub struct PgBackend {
    recipe: PgRecipe,
    knobs: Arc<PostgresKnobs>,
    addresses: Vec<String>,
    connector: Connector,
    /// TLS and the password of the `postgres` group (`crate::tls`).
    security: Security,
    setup: Arc<OnceCell<()>>,
    sql: Arc<Statements>,
    seed: u64,
    tally: WakeupTally,
}

impl PgBackend {
    /// `recipe` on `endpoints.get("postgres")` (every address, the read-write one used),
    /// drawing poll jitter from `seed`.
    pub fn new(
        recipe: PgRecipe,
        endpoints: &Endpoints,
        knobs: &PostgresKnobs,
        seed: u64,
    ) -> Result<PgBackend, BackendError> {
        use lockbench_core::knobs::KnobTable;
        knobs
            .validate()
            .map_err(|e| BackendError::Config(e.to_string()))?;
        let addresses = endpoints.get(crate::POSTGRES).to_vec();
        let security = Security::new(crate::POSTGRES, endpoints.connection(crate::POSTGRES))?;
        let connector = Connector::new(&addresses, knobs, &security, "lockbench")?;
        Ok(PgBackend {
            recipe,
            knobs: Arc::new(knobs.clone()),
            addresses,
            connector,
            security,
            setup: Arc::new(OnceCell::new()),
            sql: Arc::new(Statements::new(knobs.namespace)),
            seed,
            tally: WakeupTally::default(),
        })
    }

    /// Which recipe.
    pub fn recipe(&self) -> PgRecipe {
        self.recipe
    }
}

/// A client's `application_name`, which the observer parses back.
pub fn application_name(client: ClientId) -> String {
    format!("{CLIENT_NAME}{}", client.0)
}

impl Backend for PgBackend {
    type Client = PgClient;

    fn info(&self) -> BackendInfo {
        let k = &self.knobs;
        let fencing = "nextval of one sequence (lockbench_fence), drawn in the same statement \
             right after the lock is granted, in the holder's session: greater than every token \
             handed out before it. Sequences are replicated asynchronously, so after a promotion \
             the new primary may hand out a token an earlier grant already had (the fencing \
             checker shows it); the lock itself is not replicated at all.";
        let holds = match self.recipe {
            PgRecipe::Xact => "an open transaction (released by COMMIT)",
            _ => "the session (released by pg_advisory_unlock)",
        };
        BackendInfo {
            backend: self.recipe.kind(),
            waits_by: self.recipe.waits_by(k),
            fencing: fencing.into(),
            knobs: vec![
                ("held_by".into(), holds.into()),
                (
                    "renew".into(),
                    "checks pg_locks for its own session's lock (extends nothing)".into(),
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
                    "tcp_keepalives".into(),
                    format!(
                        "idle {:?}, interval {:?}, count {} (a partitioned holder's lock lives \
                         {:?}; a paused holder's forever)",
                        k.tcp_keepalives_idle,
                        k.tcp_keepalives_interval,
                        k.tcp_keepalives_count,
                        k.expiry()
                    ),
                ),
                ("namespace".into(), k.namespace.to_string()),
                ("servers".into(), self.addresses.join(",")),
            ],
        }
    }

    async fn connect(&self, client: ClientId) -> Result<PgClient, BackendError> {
        let connector = Arc::new(self.connector.renamed(&application_name(client)));
        let seed = self.seed ^ (u64::from(client.0) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut c = PgClient::new(
            self.recipe,
            self.knobs.clone(),
            connector,
            self.setup.clone(),
            self.sql.clone(),
            seed,
            self.tally.clone(),
        );
        c.connect_now().await?;
        Ok(c)
    }

    /// `pg-try-advisory` counts its poll timers as wake-ups (each retry a request, wasted
    /// when refused again). The blocking recipes wait inside the server's lock manager, which
    /// wakes the next waiter itself: nothing a client can count.
    fn wakeups(&self) -> Option<Wakeups> {
        (self.recipe == PgRecipe::TryAdvisory).then(|| self.tally.read())
    }

    async fn server_counters(&self) -> Result<ServerCounters, String> {
        let servers = Connector::each(
            &self.addresses,
            &self.knobs,
            &self.security,
            "lockbench-counters",
        )
        .map_err(|e| e.to_string())?;
        crate::counters::read(&servers, &self.sql.tag, self.knobs.response_timeout).await
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
