//! The server-side observer of the ZooKeeper queue recipes: who ZooKeeper says holds each
//! lock, i.e. the lowest-sequence node under the key's directory.
//!
//! One session of its own (never a client's) with one *persistent recursive* watch on the
//! recipe's directory (`{root}/fair`, `{root}/curator`, ...; ZooKeeper 3.6+): every create and
//! delete of a lock node below it arrives as an event without a request per change, so the
//! observer adds no load per acquisition. Each key's queue is kept from the events (listed once
//! with `getChildren` after every (re)connection, as `zookeeper-client` documents for
//! persistent watches: events during a disconnection are lost, ZOOKEEPER-4698), and every
//! change of the lowest node's owner is recorded. A disconnection records every key as blind
//! and replaces the session (a new session, watch and listing), with a session timeout of at
//! least [`OBSERVER_SESSION`] so that load costs the observer its view rarely.
//!
//! Who owns a node is read from its name: zk-fair and zk-herd put the client id into the
//! node's name (`lock-{client, 8 hex}{random}-{sequence}`); zk-curator's names are the
//! library's (`_c_{uuid}-lock-{sequence}`), so its holder is named by its token, the sequence.

use crate::connect::Ensemble;
use crate::paths;
use lockbench_core::server_view::parse_client_hex;
use lockbench_core::{ClientId, FencingToken, HolderRecorder, RunClock, ServerSink};
use std::collections::BTreeMap;
use std::time::Duration;
use zookeeper_client as zk;

/// The observer's shortest session timeout.
const OBSERVER_SESSION: Duration = Duration::from_secs(6);

/// How a recipe's node name says who holds it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Naming {
    /// `lock-{client hex}...-{sequence}`: the client id after the given prefix.
    ClientInName(&'static str),
    /// The name carries no client: the sequence is the holder's token.
    SequenceToken,
}

impl Naming {
    fn holder(self, name: &str, sequence: i64) -> (Option<ClientId>, Option<FencingToken>) {
        match self {
            Naming::ClientInName(prefix) => (
                name.strip_prefix(prefix)
                    .and_then(|rest| parse_client_hex(rest.as_bytes())),
                None,
            ),
            Naming::SequenceToken => (None, Some(FencingToken(sequence as u64))),
        }
    }
}

/// Watches `{dir}/k{key}` for keys `0..keys` until dropped.
pub(crate) async fn observe(
    ensemble: &Ensemble,
    dir: String,
    keys: u32,
    naming: Naming,
    clock: RunClock,
    sink: ServerSink,
) -> Result<(), String> {
    // Its own session timeout, longer than the clients' (a scenario's can be 1 s): a loaded
    // machine must not cost the observer its session, only the clients theirs.
    let ensemble = &Ensemble {
        session_timeout: ensemble.session_timeout.max(OBSERVER_SESSION),
        ..ensemble.clone()
    };
    let mut view = View {
        queues: vec![BTreeMap::new(); keys as usize],
        naming,
        recorder: HolderRecorder::new(keys, clock, sink),
    };
    loop {
        let zk = match ensemble.connect().await {
            Ok(zk) => zk,
            Err(e) => {
                tracing::warn!(error = %e, "zookeeper observer: no session; retrying");
                view.recorder.blind_all();
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        view.recorder.sent(1);
        let mut watcher = match zk.watch(&dir, zk::AddWatchMode::PersistentRecursive).await {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e, "zookeeper observer: addWatch failed; retrying");
                view.recorder.blind_all();
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if view.list_all(&zk, &dir).await.is_err() {
            view.recorder.blind_all();
            continue;
        }
        loop {
            let event = watcher.changed().await;
            match event.event_type {
                // A disconnection loses the events meanwhile (ZOOKEEPER-4698), and a persistent
                // watch was seen to stay silent after the session reconnected: a fresh session
                // with a fresh watch and listing is the one reliable way back.
                zk::EventType::Session
                    if event.session_state == zk::SessionState::Disconnected
                        || event.session_state.is_terminated() =>
                {
                    view.recorder.blind_all();
                    break;
                }
                zk::EventType::NodeCreated | zk::EventType::NodeDeleted => {
                    let created = event.event_type == zk::EventType::NodeCreated;
                    if let Some((key, name)) = split(&dir, &event.path) {
                        view.change(key, name, created);
                    }
                }
                _ => {}
            }
        }
    }
}

/// `{dir}/k{key}/{name}` → (key, name); `None` for any other path (the key directories
/// themselves, deeper nodes).
fn split<'a>(dir: &str, path: &'a str) -> Option<(u32, &'a str)> {
    let rest = path.strip_prefix(dir)?.strip_prefix("/k")?;
    let (key, name) = rest.split_once('/')?;
    if name.contains('/') {
        return None;
    }
    Some((key.parse().ok()?, name))
}

/// Every key's queue (sequence → node name) and what was last recorded for it.
struct View {
    queues: Vec<BTreeMap<i64, String>>,
    naming: Naming,
    recorder: HolderRecorder,
}

impl View {
    async fn list_all(&mut self, zk: &zk::Client, dir: &str) -> Result<(), zk::Error> {
        for key in 0..self.queues.len() {
            self.recorder.sent(1);
            let children = match zk.list_children(&format!("{dir}/k{key}")).await {
                Ok(children) => children,
                Err(zk::Error::NoNode) => Vec::new(),
                Err(e) => return Err(e),
            };
            self.queues[key] = children
                .into_iter()
                .filter_map(|name| Some((paths::sequence_of(&name)?, name)))
                .collect();
            self.emit(key);
        }
        Ok(())
    }

    fn change(&mut self, key: u32, name: &str, created: bool) {
        let (Some(queue), Some(sequence)) =
            (self.queues.get_mut(key as usize), paths::sequence_of(name))
        else {
            return;
        };
        if created {
            queue.insert(sequence, name.to_string());
        } else {
            queue.remove(&sequence);
        }
        self.emit(key as usize);
    }

    fn emit(&mut self, key: usize) {
        let (holder, token) = match self.queues[key].first_key_value() {
            Some((sequence, name)) => self.naming.holder(name, *sequence),
            None => (None, None),
        };
        self.recorder.holder(key, holder, token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_key_and_node() {
        let dir = "/lockbench/fair";
        assert_eq!(
            split(dir, "/lockbench/fair/k3/lock-0000000a-0000000042"),
            Some((3, "lock-0000000a-0000000042"))
        );
        assert_eq!(split(dir, "/lockbench/fair/k3"), None);
        assert_eq!(split(dir, "/lockbench/other/k3/x"), None);
        assert_eq!(split(dir, "/lockbench/fair/k3/a/b"), None);
    }

    #[test]
    fn names_say_the_holder() {
        let (c, t) = Naming::ClientInName("lock-").holder("lock-0000000aabcdef-0000000042", 42);
        assert_eq!((c, t), (Some(ClientId(10)), None));
        let (c, t) = Naming::SequenceToken.holder("_c_x-lock-0000000042", 42);
        assert_eq!((c, t), (None, Some(FencingToken(42))));
    }
}
