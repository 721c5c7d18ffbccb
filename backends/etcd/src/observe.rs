//! The server-side observer of the etcd lock recipes: who etcd says holds each lock, i.e. the
//! entry with the lowest create revision under the key's prefix (what both the client-side
//! Mutex and the server's Lock API grant by).
//!
//! One connection of its own, with `hasleader` required (a member cut off from its leader
//! cancels the watch instead of serving a frozen view), one `Get` of the recipe's whole
//! directory and one prefix watch from the revision after it: every entry's put and delete
//! (a release, or a lease's expiry) arrives as an event, without a request per change. Each
//! key's contenders are kept as create revision → entry; every change of the lowest one's
//! owner is recorded. A progress request every [`PROBE`] proves the stream still answers; a
//! stream that is cancelled, fails or stays silent for [`SILENCE`] makes every key blind until
//! the observer has reconnected and listed again.
//!
//! The owner is read from the entry's name, `{dir}{lease id hex}`: lockbench clients choose
//! their lease id with their client id in its low 32 bits (`session::lease_id`). For
//! etcd-lease and etcd-herd the lowest create revision is also the holder's token.

use crate::access::Access;
use crate::errors::timed;
use crate::session::owner_of;
use etcd_client::{Client, EventType, GetOptions, WatchOptions};
use lockbench_core::{ClientId, FencingToken, HolderRecorder, RunClock, ServerSink};
use std::collections::BTreeMap;
use std::time::Duration;

/// How often the observer asks its watch stream for a progress answer.
const PROBE: Duration = Duration::from_millis(500);
/// A stream that answers nothing for this long is treated as lost.
const SILENCE: Duration = Duration::from_millis(1500);

/// Watches `{dir}k{key}/` for keys `0..keys` until dropped. `tokens`: the lowest create
/// revision is the recipe's fencing token (etcd-lease, etcd-herd).
pub(crate) async fn observe(
    access: Access,
    dir: String,
    keys: u32,
    tokens: bool,
    clock: RunClock,
    sink: ServerSink,
) -> Result<(), String> {
    let mut view = View {
        entries: vec![BTreeMap::new(); keys as usize],
        dir,
        tokens,
        recorder: HolderRecorder::new(keys, clock, sink),
    };
    loop {
        if let Err(e) = view.follow(&access).await {
            tracing::warn!(error = %e, "etcd observer: lost its view; reconnecting");
        }
        view.recorder.blind_all();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every key's contenders (create revision → owner) and what was last recorded for it.
struct View {
    /// Per key: create revision → (entry name, its owner).
    entries: Vec<BTreeMap<i64, (String, Option<ClientId>)>>,
    dir: String,
    tokens: bool,
    recorder: HolderRecorder,
}

impl View {
    /// One connection's life: list, watch, follow until the stream fails.
    async fn follow(&mut self, access: &Access) -> Result<(), String> {
        let options = access
            .options()
            .map_err(|e| e.to_string())?
            .with_connect_timeout(Duration::from_secs(2))
            .with_require_leader(true);
        let mut client = timed(Client::connect(&access.urls, Some(options)))
            .await
            .map_err(|e| format!("connect: {:?}", e.kind))?;
        self.recorder.sent(1);
        let listed = timed(client.get(self.dir.clone(), Some(GetOptions::new().with_prefix())))
            .await
            .map_err(|e| format!("get: {:?}", e.kind))?;
        let revision = listed.header().map_or(0, |h| h.revision());
        for entries in &mut self.entries {
            entries.clear();
        }
        for kv in listed.kvs() {
            self.change(kv.key(), Some(kv.create_revision()));
        }
        for key in 0..self.entries.len() {
            self.emit(key);
        }
        let watch = WatchOptions::new()
            .with_prefix()
            .with_start_revision(revision + 1);
        self.recorder.sent(1);
        let mut stream = timed(client.watch(self.dir.clone(), Some(watch)))
            .await
            .map_err(|e| format!("watch: {:?}", e.kind))?;
        let mut last_answer = tokio::time::Instant::now();
        let mut probe = tokio::time::interval(PROBE);
        loop {
            tokio::select! {
                message = stream.message() => {
                    let resp = match message {
                        Ok(Some(r)) => r,
                        Ok(None) => return Err("watch stream ended".into()),
                        Err(e) => return Err(format!("watch stream: {e}")),
                    };
                    if resp.canceled() {
                        return Err(format!("watch cancelled: {}", resp.cancel_reason()));
                    }
                    last_answer = tokio::time::Instant::now();
                    let mut touched = Vec::new();
                    for event in resp.events() {
                        let Some(kv) = event.kv() else { continue };
                        let created = match event.event_type() {
                            EventType::Put => Some(kv.create_revision()),
                            EventType::Delete => None,
                        };
                        touched.extend(self.change(kv.key(), created));
                    }
                    touched.dedup();
                    for key in touched {
                        self.emit(key);
                    }
                }
                _ = probe.tick() => {
                    if last_answer.elapsed() > SILENCE {
                        return Err(format!("no answer on the watch stream for {SILENCE:?}"));
                    }
                    self.recorder.sent(1);
                    if let Err(e) = stream.request_progress().await {
                        return Err(format!("progress request: {e}"));
                    }
                }
            }
        }
    }

    /// Applies a put (`created` = its create revision) or a delete of entry `path`; returns
    /// the key it belongs to.
    fn change(&mut self, path: &[u8], created: Option<i64>) -> Option<usize> {
        let (key, name) = split(&self.dir, path)?;
        let entries = self.entries.get_mut(key)?;
        match created {
            Some(revision) => {
                let owner = i64::from_str_radix(name, 16).ok().map(owner_of);
                entries.insert(revision, (name.to_string(), owner));
            }
            None => entries.retain(|_, (n, _)| n != name),
        }
        Some(key)
    }

    fn emit(&mut self, key: usize) {
        let (owner, token) = match self.entries[key].first_key_value() {
            Some((revision, (_, owner))) => (
                *owner,
                self.tokens.then_some(FencingToken(*revision as u64)),
            ),
            None => (None, None),
        };
        self.recorder.holder(key, owner, token);
    }
}

/// `{dir}k{key}/{name}` → (key, name); the name is the owner's lease id in hex.
fn split<'a>(dir: &str, path: &'a [u8]) -> Option<(usize, &'a str)> {
    let path = std::str::from_utf8(path).ok()?;
    let rest = path.strip_prefix(dir)?.strip_prefix('k')?;
    let (key, name) = rest.split_once('/')?;
    Some((key.parse().ok()?, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_split_into_key_and_lease() {
        let dir = "/lockbench/lease/";
        assert_eq!(
            split(dir, b"/lockbench/lease/k2/7fff00000000000a"),
            Some((2, "7fff00000000000a"))
        );
        assert_eq!(split(dir, b"/lockbench/herd/k2/1"), None);
        assert_eq!(
            owner_of(0x7fff_0000_0000_000a),
            ClientId(10),
            "the low 32 bits"
        );
    }
}
