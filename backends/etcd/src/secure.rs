//! etcd with authentication on: the least privilege lockbench's user needs, the
//! set-up that creates it ([`set_up`]) and the pre-run check that a user has it
//! (`check_permissions`, which names the permission that is missing).
//!
//! What the recipes, the elections and the observer send, and what etcd 3.4 checks for each:
//! - every key lockbench writes, reads or watches is under the recipes' `prefix` (`/lockbench`
//!   by default; a run's keys under `{prefix}/{run id}/`): lock entries, the Lock API's keys
//!   (the server's Lock runs with the caller's identity), election keys, the observer's
//!   `Get` and watch. `Put`, `DeleteRange`, a `Txn`'s operations and `LeaseRevoke` (which
//!   deletes the lease's keys) need **write**, `Range`, a `Txn`'s compares and `Watch` need
//!   **read** on the key: one `readwrite` permission on the prefix range covers them;
//! - `LeaseGrant` and `LeaseKeepAlive` need no permission; neither do `/metrics` and
//!   `/health` (HTTP, which with `--client-cert-auth` asks only for a client certificate).
//!
//! So the role is one line (`ROLE` is `lockbench`, the prefix the default):
//!
//! ```sh
//! etcdctl role add lockbench
//! etcdctl role grant-permission lockbench readwrite /lockbench/ --prefix=true
//! etcdctl user add lockbench            # asks for the password
//! etcdctl user grant-role lockbench lockbench
//! ```
//!
//! ([`etcdctl_commands`] writes them for another user or prefix.) A user whose role lacks the
//! range fails the pre-run check naming the permission, in under 2 s.

use crate::access::Access;
use crate::session::Session;
use etcd_client::{Client, Compare, CompareOp, ConnectOptions, GetOptions, Permission, Txn, TxnOp};
use lockbench_core::traits::BackendError;
use lockbench_core::{Connection, Endpoints, Tls};
use secrecy::{ExposeSecret, SecretString};
use std::time::Duration;

/// The role [`set_up`] gives lockbench's user.
pub const ROLE: &str = "lockbench";

/// The key range lockbench's role needs for recipes whose `prefix` knob is `prefix`: every key
/// under `{prefix}/` (etcdctl's `--prefix=true`).
pub fn key_range(prefix: &str) -> String {
    format!("{}/", prefix.trim_end_matches('/'))
}

/// The `etcdctl` commands that create `user` with role [`ROLE`] and exactly the permission it
/// needs for recipes under `prefix`, one per line (the password is asked for interactively).
pub fn etcdctl_commands(user: &str, prefix: &str) -> String {
    format!(
        "etcdctl role add {ROLE}\n\
         etcdctl role grant-permission {ROLE} readwrite {} --prefix=true\n\
         etcdctl user add {user}\n\
         etcdctl user grant-role {user} {ROLE}\n",
        key_range(prefix)
    )
}

/// Who [`set_up`] creates.
pub struct Users<'a> {
    /// The password of `root` (etcd turns authentication on only with a `root` user that has
    /// the `root` role; lockbench never connects as it after the set-up).
    pub root_password: &'a SecretString,
    /// lockbench's user.
    pub user: &'a str,
    /// Its password.
    pub password: &'a SecretString,
    /// The recipes' `prefix` knob (`/lockbench` by default): the role's key range is under it.
    pub prefix: &'a str,
}

/// Turns authentication on for the cluster at `urls` (the members' client URLs, reached with
/// `tls`, which may carry a client certificate), creating:
/// - role [`ROLE`] with `readwrite` on every key under [`key_range`]`(prefix)`, and nothing
///   else;
/// - user `users.user` with `users.password` and that one role (an existing user gets the
///   password and the role);
/// - user `root` with `users.root_password` and role `root`, which `auth enable` requires;
///
/// then enables authentication. It can run again on a cluster it set up (it connects as
/// `root` once authentication is on, and what exists is kept; `root`'s password is then left
/// as it is, since changing it would revoke the token of the connection doing the set-up).
/// Errors name the step, never a password.
pub async fn set_up(urls: &[String], tls: Option<&Tls>, users: &Users<'_>) -> Result<(), String> {
    let access = |user: Option<&str>| {
        let mut e = Endpoints::default();
        e.set(crate::GROUP, urls.to_vec());
        e.set_connection(
            crate::GROUP,
            Connection {
                tls: tls.cloned(),
                ..Connection::default()
            },
        );
        let access = Access::new(&e).map_err(|e| e.to_string())?;
        let mut options = access.options().map_err(|e| e.to_string())?;
        if let Some(user) = user {
            options = options.with_user(user, users.root_password.expose_secret());
        }
        Ok::<_, String>((access, options.with_connect_timeout(Duration::from_secs(2))))
    };
    let (plain, options) = access(None)?;
    let mut client = connect(&plain, options).await?;
    let mut as_root = false;
    // With authentication already on, an anonymous request (or one as the client
    // certificate's user) is refused: connect as root.
    if let Err(e) = client.role_add(ROLE).await {
        let text = e.to_string();
        if [
            "user name is empty",
            "permission denied",
            "invalid auth token",
        ]
        .iter()
        .any(|m| text.contains(m))
        {
            let (root, options) = access(Some("root"))?;
            client = connect(&root, options).await?;
            as_root = true;
        } else if !text.contains("already exists") {
            return Err(format!("etcd set-up: role add {ROLE}: {e}"));
        }
    }
    let ok_if_exists = |step: &str, r: Result<(), etcd_client::Error>| match r {
        Ok(()) => Ok(()),
        Err(e) if e.to_string().contains("already exists") => Ok(()),
        Err(e) => Err(format!("etcd set-up: {step}: {e}")),
    };
    ok_if_exists("role add root", client.role_add("root").await.map(drop))?;
    ok_if_exists("role add", client.role_add(ROLE).await.map(drop))?;
    let range = Permission::read_write(key_range(users.prefix)).with_prefix();
    ok_if_exists(
        "role grant-permission",
        client.role_grant_permission(ROLE, range).await.map(drop),
    )?;
    for (user, password, role) in [
        (users.user, users.password, ROLE),
        ("root", users.root_password, "root"),
    ] {
        let added = client
            .user_add(user, password.expose_secret(), None)
            .await
            .map(drop);
        let exists = added
            .as_ref()
            .is_err_and(|e| e.to_string().contains("already exists"));
        if exists && as_root && user == "root" {
            // Logged in with it, so it is right; and etcd revokes a user's tokens when its
            // password changes, which would fail every later step ("invalid auth token").
        } else if exists {
            client
                .user_change_password(user, password.expose_secret())
                .await
                .map_err(|e| format!("etcd set-up: user passwd {user}: {e}"))?;
        } else {
            ok_if_exists("user add", added)?;
        }
        ok_if_exists(
            "user grant-role",
            client.user_grant_role(user, role).await.map(drop),
        )?;
    }
    ok_if_exists("auth enable", client.auth_enable().await.map(drop))
}

async fn connect(access: &Access, options: ConnectOptions) -> Result<Client, String> {
    match tokio::time::timeout(
        Duration::from_secs(5),
        Client::connect(&access.urls, Some(options)),
    )
    .await
    {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(format!(
            "etcd set-up: connect to {}: {e}",
            access.urls.join(",")
        )),
        Err(_) => Err(format!(
            "etcd set-up: no connection to {} within 5 s",
            access.urls.join(",")
        )),
    }
}

/// Checks before a run that the clients' user may do what the recipes do under `prefix`: one
/// `Range` of the prefix (read) and one `Txn` whose `Put` is never applied (its compare,
/// `create_revision < 0`, is never true; etcd checks a `Txn`'s every operation before it
/// runs): write. A refusal names the user, the permission and the `etcdctl` line that grants
/// it. Opens a session of its own (so a wrong setting fails as a connect would).
pub(crate) async fn check_permissions(access: &Access, prefix: &str) -> Result<(), BackendError> {
    let session = Session::open(access, 2, None).await?;
    let mut client = session.client.clone();
    let range = key_range(prefix);
    let probe = format!("{range}lockbench-permission-check");
    let read = client
        .get(
            range.clone(),
            Some(GetOptions::new().with_prefix().with_count_only()),
        )
        .await;
    let write = match read {
        Err(e) => Err(("READ", e)),
        Ok(_) => {
            let txn = Txn::new()
                .when([Compare::create_revision(probe.clone(), CompareOp::Less, 0)])
                .and_then([TxnOp::put(probe, "", None)]);
            client.txn(txn).await.map(drop).map_err(|e| ("WRITE", e))
        }
    };
    session.close().await;
    let Err((permission, e)) = write else {
        return Ok(());
    };
    let endpoint = access.urls.join(",");
    let user = access
        .user()
        .map(|u| format!("user `{u}`"))
        .unwrap_or_else(|| "the client certificate's user (its common name)".into());
    let reason = if e.to_string().contains("permission denied") {
        format!(
            "permission denied: {user} lacks {permission} permission on the keys under \
             `{range}` (the recipes' prefix); its role needs readwrite on that range: \
             `etcdctl role grant-permission <role> readwrite {range} --prefix=true` (see \
             docs/secure-clusters.md) (server said: {e})"
        )
    } else {
        match crate::diagnose::explain_status(&e, access) {
            Some(meaning) => meaning,
            None => format!("the permission check ({permission} under `{range}`) failed: {e}"),
        }
    };
    Err(BackendError::Unreachable { endpoint, reason })
}
