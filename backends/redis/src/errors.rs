//! Turning a `redis` error into lockbench's closed set of outcomes.
//!
//! The question every error answers is *did the request take effect?* Redis answers some
//! requests with an error before running them (`LOADING`, `READONLY`, `MASTERDOWN`, ...):
//! those are definite failures. A timeout or a dropped connection after the request was written
//! leaves it unknown whether the server ran it, so those are indeterminate (`info`). A request
//! that was never written (the client could not reconnect) is a definite failure too.

use lockbench_core::{ErrorKind, Outcome};
use redis::{RedisError, ServerErrorKind};

/// Why a request to one server did not produce a reply.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The request was never written: there was no connection and reconnecting failed.
    NotSent,
    /// The request was written (or may have been) and then failed.
    Sent(RedisError),
}

impl Failure {
    /// The outcome a lock call reports for this failure.
    pub(crate) fn outcome<T>(&self) -> Outcome<T> {
        match self {
            Failure::NotSent => Outcome::Fail(ErrorKind::ConnectionLost),
            Failure::Sent(e) if not_executed(e) => Outcome::Fail(ErrorKind::Unavailable),
            Failure::Sent(e) => Outcome::Info(kind(e)),
        }
    }
}

/// The closest [`ErrorKind`] for a redis error.
pub(crate) fn kind(e: &RedisError) -> ErrorKind {
    if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_connection_dropped() || e.is_io_error() {
        ErrorKind::ConnectionLost
    } else if not_executed(e) {
        ErrorKind::Unavailable
    } else {
        ErrorKind::Other
    }
}

/// `true` when the server refused the request without running it.
pub(crate) fn not_executed(e: &RedisError) -> bool {
    matches!(
        e.kind(),
        redis::ErrorKind::Server(
            ServerErrorKind::BusyLoading
                | ServerErrorKind::TryAgain
                | ServerErrorKind::MasterDown
                | ServerErrorKind::ReadOnly
                | ServerErrorKind::ClusterDown
                | ServerErrorKind::NoPerm
        )
    )
}

/// `true` when the connection should be dropped and rebuilt before the next request: it broke,
/// or a reply timed out (under a black-hole partition the socket would otherwise stay stuck
/// until TCP gives up, because a timeout does not close a multiplexed connection).
pub(crate) fn breaks_connection(e: &RedisError) -> bool {
    e.is_timeout() || e.is_connection_dropped() || e.is_io_error() || e.is_unrecoverable_error()
}
