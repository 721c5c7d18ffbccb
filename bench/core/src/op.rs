//! One history event, and the three-valued outcome of a lock call.
//!
//! As in Jepsen, every call is recorded twice: an `invoke` when it starts and a completion when
//! it ends. The completion is `ok` (it definitely happened), `fail` (it definitely did not) or
//! `info` (nobody knows: a timeout while acquiring may or may not have left a grant behind).
//! Checkers must treat `info` as "possibly happened"; the client loop retires the client that saw
//! it and starts a fresh one.

use crate::ids::{ClientId, FencingToken, KeyId};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Whether an op starts a call or says how it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpType {
    /// The call started.
    Invoke,
    /// The call definitely took effect.
    Ok,
    /// The call definitely did not take effect.
    Fail,
    /// The call may or may not have taken effect.
    Info,
}

/// What was called.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpF {
    /// Acquire a lock (blocks until granted, failed or timed out).
    Acquire,
    /// Release a held lock.
    Release,
    /// Extend a held lock's lease/TTL.
    Renew,
    /// Write to the protected resource inside the critical section, carrying the grant's
    /// fencing token. `ok` = the resource accepted it, `fail` = it rejected it as stale.
    Write,
    /// Acquire a lock in shared (read) mode: shared holders may overlap each other, never an
    /// exclusive one (`workload.read_fraction`; zk-rwlock). The mutual-exclusion checker looks
    /// at exclusive grants only; `lockbench_analysis::rwlock` checks these against them.
    #[serde(rename = "acquire-shared")]
    AcquireShared,
    /// Leader election: campaign until leading (`ok` carries the term's epoch as `token`).
    Campaign,
    /// Leader election: give leadership up.
    Resign,
    /// Leader election: the candidate saw the leader whose epoch is `token` (none: no leader).
    Observe,
    /// Leader election: the leader learned its term (epoch `token`) is over; `error` says why.
    #[serde(rename = "leader-lost")]
    LeaderLost,
}

/// Why a call failed or is indeterminate. A closed set so the client loop records a code, never
/// a formatted message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// The call did not finish within its budget.
    Timeout,
    /// The connection to the server was lost during the call.
    ConnectionLost,
    /// The ZooKeeper session or etcd lease ended.
    SessionExpired,
    /// The lock was gone when the holder released or renewed it (expired, or taken over).
    LockLost,
    /// Redlock could not get a majority of servers within the validity time.
    NoQuorum,
    /// The server refused the request (for example, no leader).
    Unavailable,
    /// A stale write: the resource saw a higher fencing token before this one.
    StaleToken,
    /// Anything else; the client's log line has the details.
    Other,
}

impl ErrorKind {
    /// The kebab-case name used in results.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::ConnectionLost => "connection-lost",
            ErrorKind::SessionExpired => "session-expired",
            ErrorKind::LockLost => "lock-lost",
            ErrorKind::NoQuorum => "no-quorum",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::StaleToken => "stale-token",
            ErrorKind::Other => "other",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The result of a lock call: definite success, definite failure, or indeterminate.
#[derive(Debug)]
pub enum Outcome<T> {
    /// Definitely happened.
    Ok(T),
    /// Definitely did not happen.
    Fail(ErrorKind),
    /// May or may not have happened.
    Info(ErrorKind),
}

impl<T> Outcome<T> {
    /// The op type this outcome is recorded as.
    pub fn op_type(&self) -> OpType {
        match self {
            Outcome::Ok(_) => OpType::Ok,
            Outcome::Fail(_) => OpType::Fail,
            Outcome::Info(_) => OpType::Info,
        }
    }

    /// The error kind of a `fail` or `info` outcome.
    pub fn error(&self) -> Option<ErrorKind> {
        match self {
            Outcome::Ok(_) => None,
            Outcome::Fail(e) | Outcome::Info(e) => Some(*e),
        }
    }

    /// `true` for `Ok`.
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok(_))
    }
}

/// One history event. `Copy` and small: recording it is a copy into a pre-sized buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    /// When it happened, from the run's clock. For an open-loop `invoke` this is the *intended*
    /// start time, so queueing delay counts as latency (coordinated omission).
    #[serde(rename = "t")]
    pub time: Nanos,
    /// Which client.
    pub client: ClientId,
    /// Invocation or completion kind.
    #[serde(rename = "type")]
    pub ty: OpType,
    /// What was called.
    pub f: OpF,
    /// Which lock.
    pub key: KeyId,
    /// The fencing token of the grant, when the op concerns one and the recipe has tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<FencingToken>,
    /// Why a `fail` or `info` ended as it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorKind>,
    /// For a `write`: whether the resource had already seen a higher token (the write is
    /// stale), whatever it then did with it. `None` when the write carried no token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<bool>,
    /// For a `write`: which of its client's grants the writer held (its `acquire` `ok`s
    /// counted from 1 in the client's own order), as the writer said. A worker's write is
    /// stamped on the resource's clock and its grant on the worker's, so their times alone
    /// cannot pair them when the worker's clock is uncertain (`lockbench_analysis::intervals`);
    /// the writer knows. `None` in histories written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<u32>,
}

impl OpType {
    /// The name used in histories.
    pub fn name(self) -> &'static str {
        match self {
            OpType::Invoke => "invoke",
            OpType::Ok => "ok",
            OpType::Fail => "fail",
            OpType::Info => "info",
        }
    }
}

impl OpF {
    /// The name used in histories.
    pub fn name(self) -> &'static str {
        match self {
            OpF::Acquire => "acquire",
            OpF::Release => "release",
            OpF::Renew => "renew",
            OpF::Write => "write",
            OpF::AcquireShared => "acquire-shared",
            OpF::Campaign => "campaign",
            OpF::Resign => "resign",
            OpF::Observe => "observe",
            OpF::LeaderLost => "leader-lost",
        }
    }
}

/// A number of an op line as written: absolute (`t`, `token`), or the difference from the
/// previous line's (`dt`, `dk`: the compact history format, [`crate::history::compact`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum LineNum {
    /// The value itself.
    Absolute(u64),
    /// The value minus the previous line's.
    Relative(i64),
}

impl Op {
    /// Appends this op as one JSON line (with a leading `"backend"` field when given) to `out`.
    ///
    /// The same text `serde_json` would write, produced without serde: the history writer
    /// encodes every op of a run while the run is going, on the same two cores as the clients
    /// and servers, so this is the one serializer whose cost shows up in the results.
    pub fn write_json_line(&self, backend: Option<&str>, out: &mut Vec<u8>) {
        let token = self.token.map(|t| LineNum::Absolute(t.0));
        self.write_json_line_as(backend, LineNum::Absolute(self.time.0), token, out);
    }

    /// Appends this op as one JSON line with its time and token written as `time` and `token`
    /// (absolute or relative): the one writer of an op line, for the absolute format
    /// ([`Op::write_json_line`]) and the compact one alike.
    pub(crate) fn write_json_line_as(
        &self,
        backend: Option<&str>,
        time: LineNum,
        token: Option<LineNum>,
        out: &mut Vec<u8>,
    ) {
        let mut num = itoa::Buffer::new();
        write_line_start(backend, out);
        write_num(out, &mut num, (b"\"t\":", b"\"dt\":"), time);
        out.extend_from_slice(b",\"client\":");
        out.extend_from_slice(num.format(self.client.0).as_bytes());
        out.extend_from_slice(b",\"type\":\"");
        out.extend_from_slice(self.ty.name().as_bytes());
        out.extend_from_slice(b"\",\"f\":\"");
        out.extend_from_slice(self.f.name().as_bytes());
        out.extend_from_slice(b"\",\"key\":");
        out.extend_from_slice(num.format(self.key.0).as_bytes());
        if let Some(token) = token {
            write_num(out, &mut num, (b",\"token\":", b",\"dk\":"), token);
        }
        if let Some(e) = self.error {
            out.extend_from_slice(b",\"error\":\"");
            out.extend_from_slice(e.name().as_bytes());
            out.push(b'"');
        }
        if let Some(stale) = self.stale {
            out.extend_from_slice(if stale {
                b",\"stale\":true"
            } else {
                b",\"stale\":false"
            });
        }
        if let Some(grant) = self.grant {
            out.extend_from_slice(b",\"grant\":");
            out.extend_from_slice(num.format(grant).as_bytes());
        }
        out.extend_from_slice(b"}\n");
    }

    /// An `invoke` of `f` on `key`.
    pub fn invoke(time: Nanos, client: ClientId, f: OpF, key: KeyId) -> Op {
        Op {
            time,
            client,
            ty: OpType::Invoke,
            f,
            key,
            token: None,
            error: None,
            stale: None,
            grant: None,
        }
    }

    /// The completion of `f` on `key` with the given outcome type and error.
    pub fn complete(
        time: Nanos,
        client: ClientId,
        f: OpF,
        key: KeyId,
        ty: OpType,
        token: Option<FencingToken>,
        error: Option<ErrorKind>,
    ) -> Op {
        Op {
            time,
            client,
            ty,
            f,
            key,
            token,
            error,
            stale: None,
            grant: None,
        }
    }
}

/// `{` and, when given, the `"backend"` field: how every history line of a backend starts (op
/// lines and the compact format's `"type":"format"` line).
pub(crate) fn write_line_start(backend: Option<&str>, out: &mut Vec<u8>) {
    out.push(b'{');
    if let Some(b) = backend {
        // Backend names are fixed kebab-case identifiers: nothing to escape.
        out.extend_from_slice(b"\"backend\":\"");
        out.extend_from_slice(b.as_bytes());
        out.extend_from_slice(b"\",");
    }
}

/// Writes `n` after the field name (with its separator) that fits it: `names.0` for an
/// absolute value, `names.1` for a relative one.
fn write_num(out: &mut Vec<u8>, num: &mut itoa::Buffer, names: (&[u8], &[u8]), n: LineNum) {
    match n {
        LineNum::Absolute(v) => {
            out.extend_from_slice(names.0);
            out.extend_from_slice(num.format(v).as_bytes());
        }
        LineNum::Relative(d) => {
            out.extend_from_slice(names.1);
            out.extend_from_slice(num.format(d).as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_json_line_is_exactly_what_serde_writes() {
        let mut op = Op::complete(
            Nanos(123_456_789),
            ClientId(7),
            OpF::Write,
            KeyId(3),
            OpType::Fail,
            Some(FencingToken(42)),
            Some(ErrorKind::StaleToken),
        );
        op.stale = Some(true);
        let plain = Op::invoke(Nanos(1), ClientId(0), OpF::Acquire, KeyId(0));
        for op in [op, plain] {
            let mut fast = Vec::new();
            op.write_json_line(None, &mut fast);
            let mut serde = serde_json::to_vec(&op).unwrap();
            serde.push(b'\n');
            assert_eq!(
                String::from_utf8(fast.clone()).unwrap(),
                String::from_utf8(serde).unwrap()
            );
            let back: Op = serde_json::from_slice(&fast).unwrap();
            assert_eq!(back, op);
            let mut tagged = Vec::new();
            op.write_json_line(Some("zk-fair"), &mut tagged);
            assert!(tagged.starts_with(b"{\"backend\":\"zk-fair\",\"t\":"));
            let back: Op = serde_json::from_slice(&tagged).unwrap();
            assert_eq!(back, op);
        }
    }
}
