//! How ZooKeeper client errors become lockbench's closed set of [`ErrorKind`]s, and which
//! outcome (definite `fail` or indeterminate `info`) each call reports.
//!
//! The rule: a call reports `fail` only when ZooKeeper's answer proves the lock state did not
//! change in the way the caller hoped; everything that leaves a doubt is `info`.
//! - Session expired (or closed): the session's ephemeral nodes are gone, so an acquire
//!   definitely holds nothing (`fail session-expired`) and a release or renew definitely found
//!   the lock gone (`fail lock-lost`).
//! - Connection loss: the request may or may not have been applied (`info connection-lost`).
//! - Node missing on release or renew: the lock was lost (`fail lock-lost`).

use lockbench_core::{ErrorKind, Outcome};
use zookeeper_client as zk;

/// The error kind for a ZooKeeper error, whatever the call.
pub(crate) fn kind(error: &zk::Error) -> ErrorKind {
    match error {
        zk::Error::ConnectionLoss => ErrorKind::ConnectionLost,
        zk::Error::SessionExpired | zk::Error::SessionMoved | zk::Error::ClientClosed => {
            ErrorKind::SessionExpired
        }
        zk::Error::Timeout => ErrorKind::Timeout,
        zk::Error::NoHosts | zk::Error::Throttled | zk::Error::NotReadOnly => {
            ErrorKind::Unavailable
        }
        _ => ErrorKind::Other,
    }
}

/// `true` when the session is over: its ephemeral nodes are gone (or will be by the time
/// anyone else looks), so nothing this client held is held any more.
pub(crate) fn session_ended(error: &zk::Error) -> bool {
    matches!(error, zk::Error::SessionExpired | zk::Error::ClientClosed)
}

/// The outcome of an acquire that stopped on `error`.
pub(crate) fn acquire_failed<T>(error: &zk::Error) -> Outcome<T> {
    if session_ended(error) {
        return Outcome::Fail(ErrorKind::SessionExpired);
    }
    match error {
        // The server refused the request outright; nothing was created.
        zk::Error::NoAuth
        | zk::Error::InvalidAcl
        | zk::Error::BadArguments(_)
        | zk::Error::NoChildrenForEphemerals => Outcome::Fail(ErrorKind::Other),
        other => {
            if kind(other) == ErrorKind::Other {
                // Outside the mapped set: say which, since results only record "other".
                tracing::warn!(error = %other, "zookeeper: an acquire ended on an unexpected error");
            }
            Outcome::Info(kind(other))
        }
    }
}

/// The outcome of a release or renew that stopped on `error`.
pub(crate) fn held_call_failed<T>(error: &zk::Error) -> Outcome<T> {
    if session_ended(error) || *error == zk::Error::NoNode {
        return Outcome::Fail(ErrorKind::LockLost);
    }
    Outcome::Info(kind(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping() {
        assert_eq!(kind(&zk::Error::ConnectionLoss), ErrorKind::ConnectionLost);
        assert_eq!(kind(&zk::Error::SessionExpired), ErrorKind::SessionExpired);
        assert_eq!(kind(&zk::Error::Timeout), ErrorKind::Timeout);
        assert!(matches!(
            acquire_failed::<()>(&zk::Error::ConnectionLoss),
            Outcome::Info(ErrorKind::ConnectionLost)
        ));
        assert!(matches!(
            acquire_failed::<()>(&zk::Error::SessionExpired),
            Outcome::Fail(ErrorKind::SessionExpired)
        ));
        assert!(matches!(
            held_call_failed::<()>(&zk::Error::NoNode),
            Outcome::Fail(ErrorKind::LockLost)
        ));
        assert!(matches!(
            held_call_failed::<()>(&zk::Error::SessionExpired),
            Outcome::Fail(ErrorKind::LockLost)
        ));
        assert!(matches!(
            held_call_failed::<()>(&zk::Error::ConnectionLoss),
            Outcome::Info(ErrorKind::ConnectionLost)
        ));
    }
}
