//! The bucket and its keys: the bucket's name and settings, a lock's key, a client's
//! connection, and opening (or making) the bucket on it.
//!
//! The bucket keeps one message per key (`history = 1`) on every server (`replicas = 3`, a
//! file store), and drops a message `ttl` after it was written (`max_age`): that is the lock's
//! life. Unlike a KV bucket made by the KV API, it allows deleting a message by its sequence
//! (`deny_delete = false`): that is how a holder releases (see [`crate::client`] for why not
//! by a delete marker). Its name carries the age (`lockbench-10000ms`), because `max_age` is the bucket's and
//! a stream's settings cannot differ between two runs that use it. Making it is idempotent:
//! JetStream answers a create with the same settings with the existing stream.
//!
//! The bucket's stream is made here, with the settings a KV bucket has (`KV_<bucket>`,
//! subjects `$KV.<bucket>.>`, rollups allowed, discard new, direct gets allowed) but deletes
//! allowed, not through the client's `create_key_value`: that one first reads the account's
//! JetStream info and fails to parse a 2.9 server's answer (it has no `reserved_memory`,
//! which the client requires), although it does not use it.
//!
//! Keys are `<prefix>.k<id>` (`locks.r1a2b3c4d.k0`): the run's prefix keeps runs apart, and
//! the observer and the counters find a run's keys and connections by it.

use crate::NatsKnobs;
use crate::login::{Login, Refusals};
use async_nats::jetstream::kv::Store;
use async_nats::jetstream::stream::{Config, DiscardPolicy, StorageType};
use lockbench_core::KeyId;
use lockbench_core::traits::BackendError;
use std::sync::Arc;
use tokio::sync::Notify;

/// The bucket `knobs` use.
pub fn bucket_name(knobs: &NatsKnobs) -> String {
    knobs.bucket.clone()
}

/// The KV key of lock `key` under `prefix`.
pub fn key_name(prefix: &str, key: KeyId) -> String {
    format!("{prefix}.k{}", key.0)
}

/// The core NATS subject a release announces itself on, for the key `name` of `bucket`.
pub(crate) fn wake_subject(bucket: &str, name: &str) -> String {
    format!("lockbench.wake.{bucket}.{name}")
}

/// The connection name of a run's client `id`, its observer or its counters reader
/// (`lockbench/<prefix>/c3`): the counters sum the connections named `lockbench/<prefix>/c*`.
pub(crate) fn connection_name(prefix: &str, who: &str) -> String {
    format!("lockbench/{prefix}/{who}")
}

/// The bucket's stream settings (what a KV bucket's are, with `history = 1`).
fn config(knobs: &NatsKnobs) -> Config {
    let bucket = bucket_name(knobs);
    Config {
        name: format!("KV_{bucket}"),
        description: Some(
            "lockbench locks: one entry per held lock, dropped max_age after its last write".into(),
        ),
        subjects: vec![format!("$KV.{bucket}.>")],
        max_messages_per_subject: 1,
        max_age: knobs.ttl,
        storage: StorageType::File,
        num_replicas: usize::from(knobs.replicas),
        allow_rollup: true,
        deny_delete: false,
        deny_purge: false,
        allow_direct: true,
        discard: DiscardPolicy::New,
        ..Config::default()
    }
}

/// A connection to `addresses` named `name` (only those addresses: servers the cluster
/// announces are ignored, so a link proxy in front of the given ones is never bypassed), with
/// `login`'s TLS and user. `reconnected`, when given, is notified at every (re)connect:
/// wake-ups published while a client was disconnected are lost, so a waiter retries then.
/// `refusals` hears every subject the server refuses it.
pub(crate) async fn connect(
    addresses: &[String],
    name: &str,
    knobs: &NatsKnobs,
    login: &Login,
    reconnected: Option<Arc<Notify>>,
    refusals: &Refusals,
) -> Result<async_nats::Client, BackendError> {
    let urls: Vec<String> = addresses
        .iter()
        .map(|a| match a.starts_with("nats://") {
            true => a.clone(),
            false => format!("nats://{a}"),
        })
        .collect();
    let options = async_nats::ConnectOptions::new()
        .name(name)
        .connection_timeout(knobs.connect_timeout)
        .request_timeout(Some(knobs.response_timeout))
        .ignore_discovered_servers();
    let refusals = refusals.clone();
    let options = login.apply(options).event_callback(move |event| {
        let notify = reconnected.clone();
        let refusals = refusals.clone();
        async move {
            match event {
                async_nats::Event::Connected => {
                    if let Some(n) = notify {
                        n.notify_one();
                    }
                }
                async_nats::Event::ServerError(e) => refusals.heard(&e),
                _ => {}
            }
        }
    });
    let connect = options.connect(urls.as_slice());
    match tokio::time::timeout(knobs.connect_timeout * 2, connect).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(BackendError::Unreachable {
            endpoint: addresses.join(","),
            reason: login.explain(&e),
        }),
        Err(_) => Err(BackendError::Unreachable {
            endpoint: addresses.join(","),
            reason: format!("no connection within {:?}", knobs.connect_timeout * 2),
        }),
    }
}

/// The bucket on `client` (connected to one of `addresses`), made when missing, once its
/// stream has a leader; at once with the reason when the server refuses the bucket's subjects
/// (`refusals`).
pub(crate) async fn open(
    client: &async_nats::Client,
    addresses: &[String],
    knobs: &NatsKnobs,
    refusals: &Refusals,
) -> Result<Store, BackendError> {
    tokio::select! {
        opened = open_bucket(client, knobs) => opened,
        said = refusals.refused() => Err(BackendError::Config(format!(
            "{}: {}",
            addresses.join(","),
            crate::login::refusal(&bucket_name(knobs), &said),
        ))),
    }
}

/// [`open`] without the refusals.
async fn open_bucket(
    client: &async_nats::Client,
    knobs: &NatsKnobs,
) -> Result<Store, BackendError> {
    let mut js = async_nats::jetstream::new(client.clone());
    js.set_timeout(knobs.response_timeout);
    let name = bucket_name(knobs);
    let unavailable = |what: &str, e: &dyn std::fmt::Display| BackendError::Unreachable {
        endpoint: format!("bucket {name}"),
        reason: format!("{what}: {e}"),
    };
    match js.get_key_value(&name).await {
        Err(_) => {
            // Making a replicated stream asks the meta leader to place it on three servers: on
            // a loaded machine one request can time out while a retry succeeds. Idempotent.
            retried(knobs, || js.get_or_create_stream(config(knobs)))
                .await
                .map_err(|e| unavailable("making the bucket", &e))?;
        }
        Ok(store) => {
            let now = &store.stream.cached_info().config;
            if now.max_age != knobs.ttl || now.num_replicas != usize::from(knobs.replicas) {
                js.update_stream(config(knobs))
                    .await
                    .map_err(|e| unavailable("setting the bucket's max_age", &e))?;
            }
        }
    }
    // A stream just made has no Raft leader for a moment, and its info request then goes
    // unanswered until it times out (on a loaded machine, once, 2 s after the make had
    // succeeded): asked again.
    let store = retried(knobs, || js.get_key_value(&name))
        .await
        .map_err(|e| unavailable("opening the bucket", &e))?;
    leader_elected(&store, knobs)
        .await
        .map_err(|e| unavailable("waiting", &e))?;
    if store.stream.cached_info().config.deny_delete {
        return Err(BackendError::Config(format!(
            "bucket {name} denies deleting messages (made by the KV API?); the nats-kv recipe \
             releases by deleting its message: use another [nats] bucket"
        )));
    }
    Ok(store)
}

/// `attempt`'s first success, asked again every 100 ms until five `response_timeout`s have
/// passed; then its last error.
async fn retried<T, E, F>(knobs: &NatsKnobs, mut attempt: impl FnMut() -> F) -> Result<T, E>
where
    F: std::future::Future<Output = Result<T, E>>,
{
    let deadline = tokio::time::Instant::now() + knobs.response_timeout * 5;
    loop {
        match attempt().await {
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            done => return done,
        }
    }
}

/// Waits until the bucket's stream has a Raft leader (a stream just made may have none for a
/// moment, and requests to it then go unanswered until they time out), within five
/// `response_timeout`s.
async fn leader_elected(store: &Store, knobs: &NatsKnobs) -> Result<(), String> {
    let has_leader = |info: &async_nats::jetstream::stream::Info| {
        info.cluster.as_ref().is_some_and(|c| c.leader.is_some())
    };
    if has_leader(store.stream.cached_info()) {
        return Ok(());
    }
    retried(knobs, || async {
        match store.stream.get_info().await {
            Ok(info) if has_leader(&info) => Ok(()),
            _ => Err(()),
        }
    })
    .await
    .map_err(|()| {
        format!(
            "the bucket's stream has no leader after {:?}",
            knobs.response_timeout * 5
        )
    })
}
