//! Turning `etcd-client` errors into lockbench's closed set of [`ErrorKind`]s.
//!
//! The question each call site must answer is not only *what* went wrong but whether the
//! request may still have taken effect. A gRPC status the server produced after deciding
//! (lease not found, invalid argument) is definite; a transport error or a timeout is not: the
//! request may have been applied before the answer was lost. Acquire turns the latter into
//! `Outcome::Info`, as Jepsen does.

use lockbench_core::ErrorKind;
use std::time::Duration;

/// gRPC status codes we distinguish (numeric, as in the gRPC spec, so this crate does not need
/// to name `tonic` itself).
const CANCELLED: i32 = 1;
const INVALID_ARGUMENT: i32 = 3;
const DEADLINE_EXCEEDED: i32 = 4;
const NOT_FOUND: i32 = 5;
const FAILED_PRECONDITION: i32 = 9;
const UNAVAILABLE: i32 = 14;

/// Budget for one unary request (a grant, a txn, a get, a delete). Blocking waits (the lock
/// itself) have no budget here: the caller cancels them.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// What went wrong with one request, and whether the server definitely did not apply it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallError {
    /// The kind recorded in the history.
    pub kind: ErrorKind,
    /// `true` when the server answered with a refusal, so the request had no effect.
    pub definite: bool,
}

impl CallError {
    /// The request did not answer within [`REQUEST_TIMEOUT`] (indeterminate).
    pub(crate) const TIMEOUT: CallError = CallError {
        kind: ErrorKind::Timeout,
        definite: false,
    };

    /// The lease behind the lock is gone (definite: nothing was written with it).
    pub(crate) const LEASE_GONE: CallError = CallError {
        kind: ErrorKind::SessionExpired,
        definite: true,
    };

    /// A transport-level failure (indeterminate).
    pub(crate) const CONNECTION_LOST: CallError = CallError {
        kind: ErrorKind::ConnectionLost,
        definite: false,
    };
}

/// Classifies an `etcd-client` error.
pub(crate) fn classify(e: &etcd_client::Error) -> CallError {
    match e {
        etcd_client::Error::GRpcStatus(status) => {
            let code = status.code() as i32;
            let msg = status.message();
            if msg.contains("lease not found") {
                return CallError::LEASE_GONE;
            }
            match code {
                DEADLINE_EXCEEDED => CallError::TIMEOUT,
                // "no leader", "leader changed", "transport is closing": the request may or may
                // not have been proposed.
                UNAVAILABLE | CANCELLED => CallError {
                    kind: if msg.contains("leader") {
                        ErrorKind::Unavailable
                    } else {
                        ErrorKind::ConnectionLost
                    },
                    definite: false,
                },
                NOT_FOUND | INVALID_ARGUMENT | FAILED_PRECONDITION => CallError {
                    kind: ErrorKind::Other,
                    definite: true,
                },
                _ => CallError {
                    kind: ErrorKind::Other,
                    definite: false,
                },
            }
        }
        etcd_client::Error::TransportError(_)
        | etcd_client::Error::IoError(_)
        | etcd_client::Error::WatchError(_)
        | etcd_client::Error::LeaseKeepAliveError(_) => CallError::CONNECTION_LOST,
        _ => CallError {
            kind: ErrorKind::Other,
            definite: false,
        },
    }
}

/// Runs one unary request under [`REQUEST_TIMEOUT`] and classifies its failure.
pub(crate) async fn timed<T>(
    call: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, CallError> {
    match tokio::time::timeout(REQUEST_TIMEOUT, call).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(classify(&e)),
        Err(_) => Err(CallError::TIMEOUT),
    }
}
