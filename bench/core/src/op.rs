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
}

impl Op {
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
        }
    }
}
