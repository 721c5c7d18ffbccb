//! [`NatsBackend`]: the `nats-kv` recipe bound to the `nats` servers.
//!
//! The bucket is opened (made when missing) once, on the first connect; every client then
//! has a connection of its own, named after the run's key prefix so the servers' counters
//! find the run's clients (`counters.rs`).

use crate::NatsKnobs;
use crate::bucket::{connection_name, open};
use crate::client::NatsClient;
use crate::login::{Login, Refusals};
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, BackendInfo, BackendKind, ClientId, Endpoints, RunClock, ServerCounters, ServerSink,
    WakeupTally, Wakeups,
};
use std::sync::Arc;
use tokio::sync::OnceCell;

/// `nats-kv` on the servers of the `nats` endpoints group, with the group's TLS and user
/// (`login.rs`).
#[derive(Debug)]
pub struct NatsBackend {
    knobs: Arc<NatsKnobs>,
    addresses: Vec<String>,
    login: Login,
    bucket_ready: Arc<OnceCell<()>>,
    tally: WakeupTally,
}

impl NatsBackend {
    /// The recipe on `endpoints.get("nats")` (a client connects to the first that answers).
    pub fn new(endpoints: &Endpoints, knobs: &NatsKnobs) -> Result<NatsBackend, BackendError> {
        use lockbench_core::knobs::KnobTable;
        knobs
            .validate()
            .map_err(|e| BackendError::Config(e.to_string()))?;
        let addresses = endpoints.get(crate::NATS).to_vec();
        if addresses.is_empty() {
            return Err(BackendError::Config(
                "the cluster has no `nats` endpoints".into(),
            ));
        }
        let login = Login::new(crate::NATS, endpoints.connection(crate::NATS))?;
        Ok(NatsBackend {
            knobs: Arc::new(knobs.clone()),
            addresses,
            login,
            bucket_ready: Arc::new(OnceCell::new()),
            tally: WakeupTally::default(),
        })
    }

    /// The knobs it runs with.
    pub fn knobs(&self) -> &NatsKnobs {
        &self.knobs
    }
}

impl Backend for NatsBackend {
    type Client = NatsClient;

    fn info(&self) -> BackendInfo {
        let k = &self.knobs;
        BackendInfo {
            backend: BackendKind::of("nats-kv"),
            waits_by: format!(
                "a core NATS subscription to the key's wake-up subject, on which a release \
                 publishes after deleting its message: the create is retried at once; an entry \
                 aging out sends nothing, so a waiter also retries when the entry is ttl ({:?}) \
                 old, then every {:?}",
                k.ttl, k.expiry_poll
            ),
            fencing: "the entry's revision (the bucket stream's sequence) at the create: every \
                      later write to the bucket has a larger one"
                .into(),
            knobs: vec![
                ("bucket".into(), crate::bucket_name(k)),
                (
                    "ttl".into(),
                    format!(
                        "{:?} (the bucket's max_age: a lock lives ttl after its last write; \
                         renew rewrites it)",
                        k.ttl
                    ),
                ),
                ("replicas".into(), k.replicas.to_string()),
                ("prefix".into(), k.prefix.clone()),
                ("connect_timeout".into(), format!("{:?}", k.connect_timeout)),
                (
                    "response_timeout".into(),
                    format!("{:?}", k.response_timeout),
                ),
                ("expiry_poll".into(), format!("{:?}", k.expiry_poll)),
                ("servers".into(), self.addresses.join(",")),
            ],
        }
    }

    async fn connect(&self, client: ClientId) -> Result<NatsClient, BackendError> {
        let name = connection_name(&self.knobs.prefix, &format!("c{}", client.0));
        let reconnected = Arc::new(tokio::sync::Notify::new());
        let refusals = Refusals::default();
        let conn = crate::bucket::connect(
            &self.addresses,
            &name,
            &self.knobs,
            &self.login,
            Some(reconnected.clone()),
            &refusals,
        )
        .await?;
        let kv = open(&conn, &self.addresses, &self.knobs, &refusals).await?;
        self.bucket_ready.get_or_init(|| async {}).await;
        Ok(NatsClient::new(
            conn,
            kv,
            self.knobs.clone(),
            client,
            self.tally.clone(),
            reconnected,
        ))
    }

    /// Wake-up messages handed to waiters, wasted wake-ups and the creates they caused.
    fn wakeups(&self) -> Option<Wakeups> {
        Some(self.tally.read())
    }

    async fn server_counters(&self) -> Result<ServerCounters, String> {
        crate::counters::read(&self.addresses, &self.knobs, &self.login).await
    }

    async fn observe_server(
        &self,
        clock: RunClock,
        keys: u32,
        sink: ServerSink,
    ) -> Result<(), String> {
        let login = &self.login;
        crate::observe::observe(&self.addresses, &self.knobs, login, keys, clock, sink).await
    }
}
