//! Who the *server* says holds a lock: one observation, as a history line.
//!
//! The ops of a history say what each client *believed* (granted at `acquire ok`, released at
//! `release`); nothing in them says what the servers thought meanwhile. A server-side observer
//! (a watch from its own session, off the clients' path: `Backend::observe_server`) records,
//! per key and on the run's clock, every change of the holder the servers name: ZooKeeper the
//! lowest lock node, etcd the lowest create revision under the key's prefix, Redis the key's
//! value, Redlock the value a majority of its servers holds. With both in one history a
//! checker can find the intervals where a client still believed it held a lock the servers
//! had already given to someone else, or to no one (`lockbench_analysis::truth`), as a pure
//! function of the history.
//!
//! On disk an observation is a line `{"type":"server","t":..,"key":..,"holder":..}`; `holder`
//! is absent when nobody holds the lock (or the holder cannot be named, then `token` is there).

use crate::ids::{ClientId, FencingToken, KeyId};
use crate::time::{Nanos, RunClock};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the servers said about one key at one moment, from the observer's session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerObservation {
    /// When the observer learned it (a watch event or notification arriving, plus the read
    /// that followed it), on the run's clock. Later than the server's change by one
    /// notification's trip.
    #[serde(rename = "t")]
    pub time: Nanos,
    /// Which lock.
    pub key: KeyId,
    /// The client the servers name as holder (from the lock node's name, the lock key's lease
    /// id or the lock value), or `None`: nobody holds it, or see `token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<ClientId>,
    /// The holder's fencing token as the servers state it, where it is the same number the
    /// recipe hands its client (a zk-curator node's sequence, an etcd-lease key's create
    /// revision); how a holder is named when its name carries no client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<FencingToken>,
    /// For a state the observer *read* (Redis: `GET` after a notification) rather than was
    /// pushed: when the read was sent. The servers answered with their state at some instant
    /// between `sent` and `t`, so the state may be older than `t`; a checker must not take it
    /// as evidence about anything before `sent`. Absent for pushed states (ZooKeeper and etcd
    /// watch events arrive after the change they report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<Nanos>,
    /// When the holding runs out unless renewed (a Redis key's TTL at the time it was read):
    /// the server holds it for no one from then on, even before it deletes the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<Nanos>,
    /// The observer lost its view of the servers (connection or session lost): from here to
    /// the next observation nothing is known, and nothing is judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blind: bool,
}

impl ServerObservation {
    /// The servers name `holder` (or nobody) for `key` at `time`.
    pub fn holder(time: Nanos, key: KeyId, holder: Option<ClientId>) -> ServerObservation {
        ServerObservation {
            time,
            key,
            holder,
            token: None,
            sent: None,
            expires: None,
            blind: false,
        }
    }

    /// The observer cannot see `key`'s servers from `time` on.
    pub fn blind(time: Nanos, key: KeyId) -> ServerObservation {
        ServerObservation {
            blind: true,
            ..ServerObservation::holder(time, key, None)
        }
    }

    /// Whether the servers name anyone (by client or by token) as holder.
    pub fn held(&self) -> bool {
        self.holder.is_some() || self.token.is_some()
    }
}

/// Where an observer sends its observations (the runner stamps nothing: `time` is set by the
/// observer when it learned the state), and where it counts the requests it sends, so that
/// the servers' own request counters can be read without them. Not on the clients' path.
#[derive(Clone)]
pub struct ServerSink {
    record: Arc<dyn Fn(ServerObservation) + Send + Sync>,
    requests: Arc<AtomicU64>,
}

impl ServerSink {
    /// A sink that hands every observation to `record`.
    pub fn new(record: impl Fn(ServerObservation) + Send + Sync + 'static) -> ServerSink {
        ServerSink {
            record: Arc::new(record),
            requests: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Records one observation.
    pub fn record(&self, observation: ServerObservation) {
        (self.record)(observation)
    }

    /// Counts `n` requests the observer sent to the servers.
    pub fn sent(&self, n: u64) {
        self.requests.fetch_add(n, Ordering::Relaxed);
    }

    /// Requests the observer has sent so far (what the servers' counters include on its
    /// account, besides its sessions' own pings).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

/// What was last recorded for one key: holder, token, blind.
type Seen = (Option<ClientId>, Option<FencingToken>, bool);

/// The front of a [`ServerSink`]: it records a key's state only when it differs from the last
/// one recorded for that key, stamped with the run's clock, so a re-listing after a reconnect,
/// an event or a poll that does not change the holder adds no line. Observers that are
/// *pushed* every change (ZooKeeper and etcd watches) give [`holder`](Self::holder); observers
/// that poll give [`polled`](Self::polled), which also says when the read was sent.
#[derive(Debug)]
pub struct HolderRecorder {
    seen: Vec<Option<Seen>>,
    clock: RunClock,
    sink: ServerSink,
}

impl HolderRecorder {
    /// A recorder for keys `0..keys`, with nothing recorded yet.
    pub fn new(keys: u32, clock: RunClock, sink: ServerSink) -> HolderRecorder {
        HolderRecorder {
            seen: vec![None; keys as usize],
            clock,
            sink,
        }
    }

    /// The servers now name `holder` (by client) and `token` for `key` (both `None`: nobody).
    pub fn holder(&mut self, key: usize, holder: Option<ClientId>, token: Option<FencingToken>) {
        self.record(key, (holder, token, false), None);
    }

    /// A poll sent at `sent` found `holder` for `key` (`None`: nobody): the servers' state is
    /// from some instant between `sent` and now.
    pub fn polled(&mut self, key: usize, holder: Option<ClientId>, sent: Nanos) {
        self.record(key, (holder, None, false), Some(sent));
    }

    /// The servers name a holder for `key` that is no client of the run: blind, rather than
    /// said to be free.
    pub fn blind(&mut self, key: usize) {
        self.record(key, (None, None, true), None);
    }

    /// The observer lost its view: every key is blind until it is seen again.
    pub fn blind_all(&mut self) {
        for key in 0..self.seen.len() {
            self.blind(key);
        }
    }

    /// Counts `n` requests the observer sent (see [`ServerSink::sent`]).
    pub fn sent(&self, n: u64) {
        self.sink.sent(n);
    }

    fn record(&mut self, key: usize, state: Seen, sent: Option<Nanos>) {
        if self.seen[key] == Some(state) {
            return;
        }
        self.seen[key] = Some(state);
        let (holder, token, blind) = state;
        self.sink.record(ServerObservation {
            token,
            blind,
            sent,
            ..ServerObservation::holder(self.clock.now(), KeyId(key as u32), holder)
        });
    }
}

impl std::fmt::Debug for ServerSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSink")
            .field("requests", &self.requests())
            .finish()
    }
}

/// A server observation as one history line: `{"type":"server","t":..,..}`.
#[derive(Serialize, Deserialize)]
pub struct ServerLine<E> {
    /// Always `server`.
    #[serde(rename = "type")]
    pub kind: ServerTag,
    /// The observation.
    #[serde(flatten)]
    pub observation: E,
}

/// The `type` of a server line.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerTag {
    /// A server-side observation.
    Server,
}

/// Client ids are 32 bits; recipes put them into lock names and values as 8 lower-case hex
/// digits (etcd: the low 32 bits of the lease id), which is what an observer parses back.
pub fn client_hex(client: ClientId) -> [u8; 8] {
    let mut out = [0u8; 8];
    for (i, b) in out.iter_mut().enumerate() {
        let nibble = (client.0 >> (28 - 4 * i)) & 0xf;
        *b = b"0123456789abcdef"[nibble as usize];
    }
    out
}

/// The client whose [`client_hex`] starts `text`, if it does.
pub fn parse_client_hex(text: &[u8]) -> Option<ClientId> {
    let digits = text.get(..8)?;
    let s = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(s, 16).ok().map(ClientId)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_hex_round_trips() {
        for c in [0, 7, 0xdead_beef, u32::MAX] {
            let hex = client_hex(ClientId(c));
            assert_eq!(parse_client_hex(&hex), Some(ClientId(c)));
        }
        assert_eq!(&client_hex(ClientId(0x1a)), b"0000001a");
        assert_eq!(parse_client_hex(b"123"), None);
        assert_eq!(parse_client_hex(b"zzzzzzzz"), None);
    }

    #[test]
    fn the_recorder_records_each_keys_changes_only() {
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let out = lines.clone();
        let sink = ServerSink::new(move |o| out.lock().unwrap().push(o));
        let mut r = HolderRecorder::new(2, RunClock::start(), sink);
        r.holder(0, Some(ClientId(1)), None);
        r.holder(0, Some(ClientId(1)), None);
        r.holder(1, None, Some(FencingToken(7)));
        r.blind_all();
        r.blind_all();
        r.holder(0, Some(ClientId(1)), None);
        let got: Vec<_> = lines
            .lock()
            .unwrap()
            .iter()
            .map(|o| (o.key.0, o.holder, o.token, o.blind))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Some(ClientId(1)), None, false),
                (1, None, Some(FencingToken(7)), false),
                (0, None, None, true),
                (1, None, None, true),
                (0, Some(ClientId(1)), None, false),
            ]
        );
    }

    #[test]
    fn lines_say_server_and_leave_out_what_is_absent() {
        let o = ServerObservation::holder(Nanos(5), KeyId(0), Some(ClientId(3)));
        let line = serde_json::to_string(&ServerLine {
            kind: ServerTag::Server,
            observation: o,
        })
        .unwrap();
        assert_eq!(line, r#"{"type":"server","t":5,"key":0,"holder":3}"#);
        let blind = ServerObservation::blind(Nanos(6), KeyId(1));
        let line = serde_json::to_string(&ServerLine {
            kind: ServerTag::Server,
            observation: blind,
        })
        .unwrap();
        assert_eq!(line, r#"{"type":"server","t":6,"key":1,"blind":true}"#);
        let back: ServerLine<ServerObservation> = serde_json::from_str(&line).unwrap();
        assert_eq!(back.observation, blind);
    }
}
