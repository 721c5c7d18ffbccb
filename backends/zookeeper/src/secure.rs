//! ZooKeeper with a digest user: what lockbench's user needs, the set-up that gives
//! it ([`set_up`]) and the pre-run check that it has it (`check_permissions`, which names the
//! permission and the node).
//!
//! With `user` set, every session sends `addauth digest user:password` when it connects, and
//! every node lockbench creates (the `root` directory and its ancestors below the chroot, each
//! lock directory, each lock or election node) carries the ACL `auth::cdrwa`: the creating
//! session's identity, `digest:user:<hash>`, may do everything; no one else may do anything.
//! So the only ACL a cluster's administrator must grant is on the node lockbench creates its
//! `root` under (the chroot, or `/`): **CREATE** (to create `root` when it is missing) and
//! **READ**; lockbench never writes, deletes or lists a node it did not create, but for the
//! election's cleanup, which deletes its own directory.
//!
//! ZooKeeper's digest scheme accepts any password at `addauth` (it only records the identity
//! `user:base64(sha1(user:password))`), so a wrong password is refused only at a node whose ACL
//! names the right identity, as `NoAuth`: the check cannot tell a wrong password from a
//! missing permission, and says both.

use crate::connect::Ensemble;
use crate::fair::{ephemeral_sequential, make_parents};
use lockbench_core::traits::BackendError;
use secrecy::{ExposeSecret, SecretString};
use std::time::Duration;
use zookeeper_client as zk;

/// Creates `chroot` (an absolute path, each missing ancestor too) on the ensemble at
/// `connect_string` (over TLS with `tls`' files when set) as digest user `user` with
/// `password`, every created node with ACL `auth::cdrwa` (that user may do everything under
/// it; no one else anything). An existing `chroot` gets that ACL (which needs ADMIN on it).
/// This is all a digest user needs on the server side: ZooKeeper keeps no list of digest
/// users, the identity is in the ACLs.
pub async fn set_up(
    connect_string: &str,
    tls: Option<&lockbench_core::Tls>,
    chroot: &str,
    user: &str,
    password: &SecretString,
) -> Result<(), String> {
    let credentials = SecretString::from(format!("{user}:{}", password.expose_secret()));
    let connector = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .with_auth("digest", credentials.expose_secret().as_bytes());
    let connecting = async {
        match tls {
            Some(tls) => {
                let tls = crate::tls::ZkTls::new(tls)?;
                connector
                    .with_tls(tls.options)
                    .secure_connect(connect_string)
                    .await
            }
            None => connector.connect(connect_string).await,
        }
        .map_err(|e| e.to_string())
    };
    let client = tokio::time::timeout(Duration::from_secs(5), connecting)
        .await
        .map_err(|_| format!("zookeeper set-up: no session with {connect_string} within 5 s"))?
        .map_err(|e| format!("zookeeper set-up: no session with {connect_string}: {e}"))?;
    let mut requests = 0;
    match make_parents(&client, chroot, zk::Acls::creator_all(), &mut requests).await {
        Ok(()) => {}
        Err(e) => return Err(format!("zookeeper set-up: cannot create {chroot}: {e}")),
    }
    client
        .set_acl(chroot, &zk::Acls::creator_all(), None)
        .await
        .map_err(|e| format!("zookeeper set-up: setAcl {chroot}: {e}"))?;
    Ok(())
}

/// How long the pre-run permission check may take: three requests, each answered in
/// milliseconds by a live server; a check that hangs (a session that stopped being answered)
/// fails within seconds, naming the server, rather than holding the run.
const CHECK_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// Checks before a run that the sessions' digest user may create, list and delete under
/// `root` (the recipes' `root` knob, relative to the chroot): makes `root`'s missing ancestors,
/// creates one ephemeral node in it, lists it and deletes the node. A refusal names the user,
/// the node and the permission. Opens a session of its own.
pub(crate) async fn check_permissions(ensemble: &Ensemble, root: &str) -> Result<(), BackendError> {
    let zk = ensemble.connect().await?;
    let mut requests = 0;
    let probe = format!("{root}/lockbench-permission-check-");
    let dir = if root.is_empty() { "/" } else { root };
    let checked = async {
        if !root.is_empty() {
            make_parents(&zk, root, ensemble.acls, &mut requests)
                .await
                .map_err(|e| (e, "CREATE", parent_of(root).to_string()))?;
        }
        let (_, sequence) = zk
            .create(&probe, b"", &ephemeral_sequential(ensemble.acls))
            .await
            .map_err(|e| (e, "CREATE", root.to_string()))?;
        zk.list_children(dir)
            .await
            .map_err(|e| (e, "READ", root.to_string()))?;
        let node = format!("{probe}{sequence}");
        zk.delete(&node, None)
            .await
            .map_err(|e| (e, "DELETE", root.to_string()))
    };
    let result = tokio::time::timeout(CHECK_BUDGET, checked).await;
    crate::connect::close(ensemble, zk).await;
    let Ok(result) = result else {
        return Err(BackendError::Unreachable {
            endpoint: ensemble.connect_string.clone(),
            reason: format!(
                "no answer to the permission check (create, list and delete under `{}`) \
                 within {} s: the server is overloaded or stopped answering this session",
                if root.is_empty() { "/" } else { root },
                CHECK_BUDGET.as_secs()
            ),
        });
    };
    let Err((error, permission, node)) = result else {
        return Ok(());
    };
    let chroot = crate::connect::chroot(&ensemble.connection).unwrap_or("");
    let at = match (chroot, node.as_str()) {
        ("", "") => "/".to_string(),
        (chroot, node) => format!("{chroot}{node}"),
    };
    let reason = match (error, ensemble.user()) {
        (zk::Error::NoAuth, Some(user)) => format!(
            "permission denied (NoAuth): digest user `{user}` may not {permission} at \
             `{at}`: either the password in `zookeeper.password_env` / \
             `zookeeper.password_file` is not this user's (ZooKeeper accepts any password at \
             `addauth` and refuses at the node) or the node's ACL lacks {permission} for \
             `digest:{user}:<hash>`; grant it (`setAcl {at} digest:{user}:<hash>:cdrwa`, or \
             create the node with `lockbench_zookeeper::secure::set_up`; see \
             docs/secure-clusters.md)"
        ),
        (zk::Error::NoAuth, None) => format!(
            "permission denied (NoAuth) to {permission} at `{at}`: the node's ACL \
             admits only some users: set `zookeeper.user` and `zookeeper.password_env` (or \
             `zookeeper.password_file`) to a digest user it admits"
        ),
        (e, _) => format!("the permission check ({permission} at `{at}`) failed: {e}"),
    };
    Err(BackendError::Unreachable {
        endpoint: ensemble.connect_string.clone(),
        reason,
    })
}

/// The node a path is created under (`""`: the root).
fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(parent, _)| parent)
}
