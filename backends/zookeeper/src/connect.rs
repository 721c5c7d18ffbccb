//! Sessions: how a client opens one, ends it cleanly, ends it as a crash would, and how a test
//! or a nemesis can expire it from outside.
//!
//! **Every session is opened detached** (`Connector::with_detached`). In `zookeeper-client`
//! 0.11 the session task sends `CloseSession` when the last `Client` handle is dropped
//! (`session/mod.rs`, `serve_session`: the request channel closes, and unless `detached` a
//! `CloseSession` is queued). A crashed process never says goodbye, so that behaviour would
//! make [`abandon`] dishonest: the server would delete the dead holder's ephemeral nodes at
//! once. With `detached`, dropping the last handle flushes what is pending and closes the TCP
//! connection without `CloseSession`, which is exactly what the server sees when a process
//! dies (the kernel closes its sockets); the session, and its lock nodes, live on until the
//! session timeout. No relay or proxy sits on the hot path.
//!
//! The price is paid in [`close`]: to end a detached session gracefully, lockbench drops the
//! connection and re-attaches to the same session (id and password) with a normal,
//! non-detached handle, which it then drops, so the crate sends `CloseSession` and the
//! session's nodes vanish at once. That costs one extra connection setup per client lifetime,
//! never per op. [`expire`] uses the same re-attach-and-close move while the owner is still
//! connected, which is how Curator's test utilities kill a session from outside.

use crate::ZookeeperKnobs;
use crate::tls::ZkTls;
use lockbench_core::Endpoints;
use lockbench_core::traits::BackendError;
use std::sync::Arc;
use std::time::Duration;
use zookeeper_client as zk;

/// Longest wait for one TCP connection (and, after connecting, the idle time after which the
/// crate declares the connection dead). Short, so an unreachable ensemble of three fails in
/// about three seconds, but never more than 2/5 of the session timeout, so a lost connection
/// is noticed with time left to reconnect before the session expires.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(1);

/// Upper bound on a whole connect, whatever the crate does (it also bounds session setup by
/// the session timeout).
const CONNECT_BUDGET: Duration = Duration::from_secs(4);

/// Rounds over the whole address list before a connect gives up. One round gives each member
/// one [`CONNECTION_TIMEOUT`] (less with a short session timeout); on a loaded machine a
/// member's TLS handshake or session reply can miss that once and answer the next time. A
/// round starts only when a whole one still fits in [`CONNECT_BUDGET`], so an ensemble that
/// accepts connections and never answers fails with its own error as fast as with one round,
/// and a refusing one fails its rounds at once.
const CONNECT_ROUNDS: u32 = 3;

/// Pause between two rounds.
const ROUND_PAUSE: Duration = Duration::from_millis(100);

/// How long [`close`] and [`abandon`] wait for the session task to report that it is done.
const SETTLE: Duration = Duration::from_secs(2);

/// A ZooKeeper ensemble and the session settings every client of one backend uses.
#[derive(Clone, Debug)]
pub(crate) struct Ensemble {
    /// `host:port,host:port,…`, as the crate (and the Java client) take it.
    pub(crate) connect_string: String,
    /// The members, for `mntr`.
    pub(crate) members: Vec<String>,
    /// Requested session timeout (the server may clamp it to its min/max).
    pub(crate) session_timeout: Duration,
    /// The group's settings: the digest user and its password's source (never the password,
    /// which is read at each connect).
    pub(crate) connection: lockbench_core::Connection,
    /// The ACL every node lockbench creates carries: with a digest user, `auth::cdrwa` (the
    /// creating session's identities, i.e. that user, may do everything; no one else anything),
    /// else `world:anyone:cdrwa` as before.
    pub(crate) acls: zk::Acls<'static>,
    /// The group's TLS settings, read once (`crate::tls`); `None`: plaintext.
    pub(crate) tls: Option<ZkTls>,
    /// Set once the members' TLS answered as the settings expect (`crate::diagnose`, run
    /// before the first session under TLS: where `tls.server_name` is checked).
    pub(crate) tls_checked: Arc<tokio::sync::OnceCell<()>>,
}

/// The `chroot` of the group's connection settings (`""` for none), checked: an absolute path
/// of a znode, without a trailing `/`. The node must exist on the ensemble (the server refuses a
/// session's requests under a chroot that does not).
pub(crate) fn chroot(connection: &lockbench_core::Connection) -> Result<&str, String> {
    let Some(chroot) = connection.system.get("chroot") else {
        return Ok("");
    };
    if !chroot.starts_with('/') || chroot.len() < 2 || chroot.ends_with('/') {
        return Err(format!(
            "zookeeper.chroot: `{chroot}` is not a znode path: write an absolute path without \
             a trailing slash, such as `/lockbench`"
        ));
    }
    Ok(chroot)
}

impl Ensemble {
    /// The ensemble from the cluster description; `Config` naming `zookeeper` when it has none.
    pub(crate) fn new(endpoints: &Endpoints, knobs: &ZookeeperKnobs) -> Result<Self, BackendError> {
        if endpoints.get(crate::GROUP).is_empty() {
            return Err(BackendError::Config(
                "zookeeper: the cluster has no ZooKeeper endpoints (endpoints.zookeeper is empty)"
                    .into(),
            ));
        }
        if knobs.session_timeout.is_zero() {
            return Err(BackendError::Config(
                "zookeeper.session_timeout must be greater than zero".into(),
            ));
        }
        // A chroot from the cluster file goes where the Java client takes it, after
        // the address list: every path the recipes use is then under it, on the server.
        let connection = endpoints.connection(crate::GROUP);
        let chroot = chroot(connection).map_err(BackendError::Config)?;
        let tls = connection
            .tls
            .as_ref()
            .map(ZkTls::new)
            .transpose()
            .map_err(BackendError::Config)?;
        Ok(Ensemble {
            connect_string: format!("{}{chroot}", endpoints.get(crate::GROUP).join(",")),
            members: endpoints.get(crate::GROUP).to_vec(),
            session_timeout: knobs.session_timeout,
            acls: match connection.user {
                Some(_) => zk::Acls::creator_all(),
                None => zk::Acls::anyone_all(),
            },
            connection: connection.clone(),
            tls,
            tls_checked: Arc::default(),
        })
    }

    /// The digest user, when the sessions authenticate.
    pub(crate) fn user(&self) -> Option<&str> {
        self.connection.user.as_deref()
    }

    /// Each member's time to connect and answer in one round: [`CONNECTION_TIMEOUT`], but at
    /// most 2/5 of the session timeout.
    fn connection_timeout(&self) -> Duration {
        CONNECTION_TIMEOUT.min(self.session_timeout * 2 / 5)
    }

    /// A connector with the session settings and, with a user, its digest credentials
    /// (`addauth digest user:password`, sent with every session's (re)connect), the password
    /// read from its source now.
    fn connector(&self) -> Result<zk::Connector, BackendError> {
        let connection_timeout = self.connection_timeout();
        let mut connector = zk::Client::connector()
            .with_session_timeout(self.session_timeout)
            .with_connection_timeout(connection_timeout)
            .with_fail_eagerly();
        let credentials = self
            .connection
            .credentials(crate::GROUP)
            .map_err(BackendError::Config)?;
        if let Some((user, password)) = credentials {
            use secrecy::ExposeSecret;
            let credentials =
                secrecy::SecretString::from(format!("{user}:{}", password.expose_secret()));
            connector = connector.with_auth("digest", credentials.expose_secret().as_bytes());
        }
        if let Some(tls) = &self.tls {
            connector = connector.with_tls(tls.options.clone());
        }
        Ok(connector)
    }

    fn unreachable(&self, reason: impl Into<String>) -> BackendError {
        BackendError::Unreachable {
            endpoint: self.connect_string.clone(),
            reason: reason.into(),
        }
    }

    /// Opens a new detached session. Fails fast with `Unreachable` naming the address list,
    /// or the member and the setting to fix when one of them shows it (`crate::diagnose`).
    pub(crate) async fn connect(&self) -> Result<zk::Client, BackendError> {
        if self.tls.is_some() {
            self.tls_checked
                .get_or_try_init(|| async {
                    match crate::diagnose::misconfigured(&self.members, self.tls.as_ref()).await {
                        Some((member, why)) => Err(self.misconfigured(&member, why)),
                        None => Ok(()),
                    }
                })
                .await?;
        }
        let connector = self.connector()?.with_detached();
        let started = std::time::Instant::now();
        let whole_round = self.connection_timeout() * self.members.len() as u32 + ROUND_PAUSE;
        let connecting = async {
            let mut round = 1;
            loop {
                match self.open(connector.clone()).await {
                    Err(e)
                        if round < CONNECT_ROUNDS
                            && started.elapsed() + whole_round <= CONNECT_BUDGET =>
                    {
                        tracing::debug!(round, "zookeeper: no session yet ({e}); trying again");
                        round += 1;
                        tokio::time::sleep(ROUND_PAUSE).await;
                    }
                    answer => return (round, answer),
                }
            }
        };
        let failed = match tokio::time::timeout(CONNECT_BUDGET, connecting).await {
            Ok((_, Ok(client))) => return Ok(client),
            Ok((rounds, Err(e))) => format!(
                "zookeeper: no session: no member answered the session request in {rounds} \
                 round{} over the members (each is given {:?} a round from connecting; \
                 unreachable, refusing, or accepting connections without answering): {e}",
                if rounds == 1 { "" } else { "s" },
                self.connection_timeout()
            ),
            Err(_) => format!(
                "zookeeper: no session within {CONNECT_BUDGET:?} (the session request went unanswered)"
            ),
        };
        match crate::diagnose::misconfigured(&self.members, self.tls.as_ref()).await {
            Some((member, why)) => Err(self.misconfigured(&member, why)),
            None => Err(self.unreachable(failed)),
        }
    }

    /// Opens a session with `connector`, over TLS when the group speaks it.
    async fn open(&self, connector: zk::Connector) -> Result<zk::Client, zk::Error> {
        match self.tls {
            Some(_) => connector.secure_connect(&self.connect_string).await,
            None => connector.connect(&self.connect_string).await,
        }
    }

    /// `member` answered in a way that shows a setting to fix.
    fn misconfigured(&self, member: &str, why: String) -> BackendError {
        BackendError::Unreachable {
            endpoint: member.to_string(),
            reason: format!("zookeeper: {why}"),
        }
    }
}

/// Ends `client`'s session gracefully: its ephemeral nodes are deleted at once.
pub(crate) async fn close(ensemble: &Ensemble, client: zk::Client) {
    let session = client.session().clone();
    // Let the detached connection go first, so the re-attach below does not have to move the
    // session away from a live connection.
    abandon(client).await;
    close_session(ensemble, session).await;
}

/// Ends `client` as a crash would: the connection is dropped without `CloseSession` (the
/// session is detached), so the server keeps the session, and its ephemeral nodes, until the
/// session timeout. Returns once the connection is gone.
pub(crate) async fn abandon(client: zk::Client) {
    let mut state = client.state_watcher();
    drop(client);
    wait_terminated(&mut state).await;
}

/// Ends the session of `client` from outside while `client` stays connected, as a server
/// expiring it would: the owner's connection is closed by the server and its next reconnect is
/// told the session expired. Every ephemeral node of the session is deleted at once.
pub(crate) async fn expire(ensemble: &Ensemble, client: &zk::Client) {
    close_session(ensemble, client.session().clone()).await;
}

async fn close_session(ensemble: &Ensemble, session: zk::SessionInfo) {
    let id = session.id();
    let Ok(connector) = ensemble.connector() else {
        tracing::warn!(session = %id, "zookeeper: cannot re-attach to close the session");
        return;
    };
    let attached = ensemble.open(connector.with_session(session));
    match tokio::time::timeout(CONNECT_BUDGET, attached).await {
        Ok(Ok(closer)) => {
            let mut state = closer.state_watcher();
            // Not detached: dropping the only handle sends CloseSession.
            drop(closer);
            wait_terminated(&mut state).await;
        }
        Ok(Err(zk::Error::SessionExpired)) => {}
        Ok(Err(e)) => tracing::warn!(
            session = %id,
            "zookeeper: cannot re-attach to close the session ({e}); it will expire on its own"
        ),
        Err(_) => tracing::warn!(
            session = %id,
            "zookeeper: re-attach to close the session timed out; it will expire on its own"
        ),
    }
}

/// Waits (bounded) until the session task reports a terminal state.
async fn wait_terminated(state: &mut zk::StateWatcher) {
    let waiting = async {
        while !state.peek_state().is_terminated() {
            state.changed().await;
        }
    };
    let _ = tokio::time::timeout(SETTLE, waiting).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chroot goes after the address list, where the client takes it; `mntr` still asks
    /// the members at their bare addresses.
    #[test]
    fn a_chroot_follows_the_address_list() {
        let text = "[zookeeper]\nendpoints = [\"a:1\", \"b:2\"]\nchroot = \"/team/locks\"\n";
        let e = Endpoints::from_toml(text).unwrap();
        let ensemble = Ensemble::new(&e, &ZookeeperKnobs::default()).unwrap();
        assert_eq!(ensemble.connect_string, "a:1,b:2/team/locks");
        assert_eq!(ensemble.members, ["a:1", "b:2"]);
        let plain = Endpoints::from_iter([("zookeeper", vec!["a:1".to_string()])]);
        let ensemble = Ensemble::new(&plain, &ZookeeperKnobs::default()).unwrap();
        assert_eq!(ensemble.connect_string, "a:1");
    }
}
