//! The server-side observer: who the bucket's stream leader says holds each lock, from each
//! key's last message (`STREAM.MSG.GET` by subject, answered by the leader, so never a
//! follower's past).
//!
//! Why polling and not a watch: an entry that ages out (the bucket's `max_age`) is removed
//! without any event, so a watcher would name a dead holder forever; a read sees the
//! removal. Every `observe_interval` the observer reads keys `0..keys`: a live entry's value
//! (`c<id>`) names the holder; no message, or a delete/purge marker, is nobody. An entry past
//! its age that the server has not removed yet still names its holder, as it still refuses
//! creates.
//!
//! It runs on a connection of its own (`lockbench/<prefix>/observer`), which the counters do
//! not sum, so it reports no requests to the sink: the run subtracts what an observer reports
//! from the servers' count, and these reads are not in it. While it has no connection or a read fails or
//! does not answer within `response_timeout`, the key is `blind` until a read succeeds.

use crate::NatsKnobs;
use crate::bucket::{connection_name, key_name, open};
use crate::login::{Login, Refusals};
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use lockbench_core::{ClientId, HolderRecorder, KeyId, RunClock, ServerSink};
use std::time::Duration;

/// Polls keys `0..keys` until dropped (see the module docs).
pub(crate) async fn observe(
    addresses: &[String],
    knobs: &NatsKnobs,
    login: &Login,
    keys: u32,
    clock: RunClock,
    sink: ServerSink,
) -> Result<(), String> {
    let mut seen = HolderRecorder::new(keys, clock, sink);
    let name = connection_name(&knobs.prefix, "observer");
    let subjects: Vec<String> = (0..keys)
        .map(|k| key_name(&knobs.prefix, KeyId(k)))
        .collect();
    loop {
        let refusals = Refusals::default();
        let connected = crate::bucket::connect(addresses, &name, knobs, login, None, &refusals);
        let conn = match connected.await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!("nats observer: {e}");
                seen.blind_all();
                tokio::time::sleep(knobs.observe_interval.max(Duration::from_millis(100))).await;
                continue;
            }
        };
        let kv = match open(&conn, addresses, knobs, &refusals).await {
            Ok(kv) => kv,
            Err(e) => {
                tracing::debug!("nats observer: {e}");
                seen.blind_all();
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let subjects: Vec<String> = subjects
            .iter()
            .map(|k| format!("{}{k}", kv.prefix))
            .collect();
        'reads: loop {
            for (key, subject) in subjects.iter().enumerate() {
                let read = kv.stream.get_last_raw_message_by_subject(subject);
                let answer = tokio::time::timeout(knobs.response_timeout, read).await;
                let holder = match answer {
                    Ok(Ok(m)) if m.headers.get("KV-Operation").is_some() => None,
                    Ok(Ok(m)) => match holder_of(&m.payload) {
                        Some(id) => Some(id),
                        None => {
                            seen.blind_all();
                            break 'reads;
                        }
                    },
                    Ok(Err(e)) if e.kind() == LastRawMessageErrorKind::NoMessageFound => None,
                    Ok(Err(e)) => {
                        tracing::debug!("nats observer: {e}");
                        seen.blind_all();
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue 'reads;
                    }
                    Err(_) => {
                        seen.blind_all();
                        break 'reads;
                    }
                };
                seen.holder(key, holder, None);
            }
            tokio::time::sleep(knobs.observe_interval).await;
        }
    }
}

/// The client a value names (`c<id>`).
fn holder_of(value: &[u8]) -> Option<ClientId> {
    let s = std::str::from_utf8(value).ok()?;
    s.strip_prefix('c')?.parse().ok().map(ClientId)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_names_its_client() {
        assert_eq!(holder_of(b"c17"), Some(ClientId(17)));
        assert_eq!(holder_of(b"x"), None);
        assert_eq!(
            holder_of(crate::client::holder_value(ClientId(3)).as_bytes()),
            Some(ClientId(3))
        );
    }
}
