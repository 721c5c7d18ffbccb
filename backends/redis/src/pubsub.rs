//! How a `redis-pubsub` waiter learns that the lock may be free: a release channel.
//!
//! Polling (`redis-setnx`) asks again after a fixed delay whether or not anything changed.
//! The pub/sub lock instead has each waiter `SUBSCRIBE` to the lock's release channel
//! (`<prefix>released:<i>`) on its own pub/sub connection, and the releaser `PUBLISH`es in the
//! same Lua script as its compare-and-delete ([`crate::scripts::RELEASE_PUBLISH`]). A message
//! makes the waiter try `SET NX` again; every waiter subscribed gets it, so a release wakes all
//! of them and all but one find the lock taken again (the herd, by design: Redis has no way to
//! wake just one subscriber).
//!
//! No release can be missed: the waiter subscribes *before* its second `SET NX` attempt, so a
//! release either happened before that attempt (which then succeeds or sees the next holder) or
//! after the subscription (whose message it then gets). A lock freed without a release (its
//! holder died and the TTL ran out) publishes nothing, so a waiter also tries again after
//! [`FALLBACK`] without a message. After the grant the waiter `UNSUBSCRIBE`s, so `PUBSUB NUMSUB`
//! is the number of clients waiting right now.
//!
//! Counting ([`WakeupTally`]): each message handed over by the library is a notification; the
//! `SET NX` it triggers is a request in reaction, and so is the `UNSUBSCRIBE` of the winner; a
//! message after which the `SET NX` failed is a wasted wake-up. A fallback attempt is not a
//! notification (nothing notified the client). `SUBSCRIBE` and `UNSUBSCRIBE` are counted in
//! `requests_sent` and, on the server, in `INFO commandstats`.

use crate::connect::Server;
use futures::StreamExt;
use lockbench_core::WakeupTally;
use redis::aio::PubSub;
use std::time::Duration;

/// How long a subscribed waiter waits for a message before it tries `SET NX` anyway (a lock
/// that expired instead of being released announces nothing).
pub const FALLBACK: Duration = Duration::from_millis(250);

/// What ended one wait for a release message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Woken {
    /// A release was announced.
    Message,
    /// [`FALLBACK`] passed without one.
    Fallback,
    /// The pub/sub connection is gone (and with it the subscription): the caller subscribes
    /// again before it waits again.
    Lost,
}

/// One client's pub/sub connection, opened on its first wait and kept.
pub(crate) struct ReleaseWaiter {
    server: Server,
    conn: Option<PubSub>,
    tally: WakeupTally,
}

impl std::fmt::Debug for ReleaseWaiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReleaseWaiter")
            .field("server", &self.server.address)
            .field("connected", &self.conn.is_some())
            .finish()
    }
}

impl ReleaseWaiter {
    pub(crate) fn new(server: Server, tally: WakeupTally) -> ReleaseWaiter {
        ReleaseWaiter {
            server,
            conn: None,
            tally,
        }
    }

    /// The backend-wide wake-up counters.
    pub(crate) fn tally(&self) -> &WakeupTally {
        &self.tally
    }

    /// Subscribes to `channel` (opening the pub/sub connection first if needed). Counts the
    /// `SUBSCRIBE` in `sent`.
    pub(crate) async fn subscribe(
        &mut self,
        channel: &str,
        sent: &mut u64,
    ) -> redis::RedisResult<()> {
        if self.conn.is_none() {
            self.conn = Some(self.server.pubsub().await?);
        }
        let conn = self.conn.as_mut().expect("connected above");
        *sent += 1;
        let result = conn.subscribe(channel).await;
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    /// Waits for a release message or [`FALLBACK`]. A broken connection is dropped and
    /// reported as [`Woken::Lost`].
    pub(crate) async fn wait(&mut self) -> Woken {
        let Some(conn) = self.conn.as_mut() else {
            return Woken::Lost;
        };
        let got = tokio::time::timeout(FALLBACK, conn.on_message().next())
            .await
            .map(|m| m.is_some());
        match got {
            Ok(true) => {
                self.tally.notification();
                Woken::Message
            }
            Ok(false) => {
                self.conn = None;
                Woken::Lost
            }
            Err(_) => Woken::Fallback,
        }
    }

    /// Unsubscribes from `channel` after a grant (or a failed acquire). Counts the request in
    /// `sent`; a failure drops the connection, which unsubscribes as well.
    pub(crate) async fn unsubscribe(&mut self, channel: &str, sent: &mut u64) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        *sent += 1;
        if conn.unsubscribe(channel).await.is_err() {
            self.conn = None;
        }
    }
}
