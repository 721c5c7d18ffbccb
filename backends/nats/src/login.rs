//! How the `nats` group's clients get in: TLS (the CA, the client certificate and key) and a
//! user with its password, from the group's connection settings, read once when the backend
//! is made; and what a refused connection means, in words that name the setting to change.
//!
//! Why its own TLS configuration: async-nats would read the files itself and build a rustls
//! configuration with the process's provider; [`lockbench_core::crypto::client_config`] reads
//! them as every other system's client does (ring, errors naming the setting and the file).
//! The client verifies each server's certificate against the address's host, as async-nats
//! has no way to verify another name, so `tls.server_name` is refused ([`check`]).
//!
//! A refused subject is reported by the server on the connection, not on the request
//! (`-ERR 'Permissions Violation ...'`), and the request would wait out its whole timeout:
//! [`Refusals`] keeps the last one, so what waits on the server can give up at once, saying
//! which subject and why.

use async_nats::ConnectOptions;
use lockbench_core::Connection;
use lockbench_core::traits::BackendError;
use secrecy::{ExposeSecret, SecretString};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The settings the clients honour, for
/// [`System::check_connection`](lockbench_core::System::check_connection): TLS without
/// `server_name`, and a user with a password; the shape only.
pub(crate) fn check(group: &str, c: &Connection) -> Result<(), String> {
    c.refuse(
        group,
        "NATS",
        &["tls", "user", "password_env", "password_file"],
    )?;
    if c.tls.as_ref().is_some_and(|t| t.server_name.is_some()) {
        return Err(format!(
            "{group}.tls.server_name: lockbench's NATS client (async-nats) verifies each \
             server's certificate against the address's host; write the addresses with a name \
             or IP the certificate carries instead"
        ));
    }
    c.require_user_with_password(group, "NATS authenticates a user by name")
}

/// How a group's clients log in: TLS, the user and its password.
#[derive(Clone, Default)]
pub(crate) struct Login {
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The CA file, for errors.
    ca: Option<String>,
    /// A client certificate is presented, for errors.
    mutual: bool,
    user: Option<String>,
    password: Option<SecretString>,
    /// Where the password came from (`nats.password_env` ...), for errors.
    source: Option<String>,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("tls", &self.tls.is_some())
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

impl Login {
    /// From group `group`'s connection settings.
    pub fn new(group: &str, c: &Connection) -> Result<Login, BackendError> {
        check(group, c).map_err(BackendError::Config)?;
        // async-nats builds a configuration of its own (from the process's provider) when a
        // server requires TLS that the settings do not ask for.
        lockbench_core::crypto::install_ring();
        let tls = match &c.tls {
            Some(t) => {
                let config = lockbench_core::crypto::client_config(group, t)
                    .map_err(BackendError::Config)?;
                Some(Arc::new(config))
            }
            None => None,
        };
        let credentials = c.credentials(group).map_err(BackendError::Config)?;
        let source = c.password_setting(group);
        Ok(Login {
            ca: c
                .tls
                .as_ref()
                .and_then(|t| t.ca.as_ref())
                .map(|p| p.display().to_string()),
            mutual: c.tls.as_ref().is_some_and(lockbench_core::Tls::mutual),
            tls,
            user: credentials.as_ref().map(|(u, _)| u.to_string()),
            password: credentials.map(|(_, p)| p),
            source,
        })
    }

    /// The TLS configuration, when the group speaks TLS (the monitoring port's HTTPS too).
    pub fn tls(&self) -> Option<&Arc<rustls::ClientConfig>> {
        self.tls.as_ref()
    }

    /// `options` with the TLS and the login.
    pub fn apply(&self, mut options: ConnectOptions) -> ConnectOptions {
        if let Some(tls) = &self.tls {
            options = options.require_tls(true).tls_client_config((**tls).clone());
        }
        if let (Some(user), Some(pw)) = (&self.user, &self.password) {
            options = options.user_and_password(user.clone(), pw.expose_secret().to_string());
        }
        options
    }

    /// What a failed connect means, and what to change (never the password).
    pub fn explain(&self, e: &async_nats::ConnectError) -> String {
        let text = chain(e);
        let lower = format!("{text} {e:?}").to_ascii_lowercase();
        let user = self.user.as_deref().unwrap_or("(no user)");
        let source = self.source.as_deref().unwrap_or("no password set");
        let fix = if lower.contains("authorization violation") && self.user.is_none() {
            "the server admits only its users: set `nats.user` and its password \
             (`nats.password_env` or `nats.password_file`)"
                .to_string()
        } else if lower.contains("authorization violation") {
            format!("authorization violation for `{user}`: check its password (from `{source}`)")
        } else if lower.contains("unknownissuer") || lower.contains("badsignature") {
            match &self.tls {
                Some(_) => format!(
                    "the server's certificate is not signed by the CA of `nats.tls.ca` ({}): \
                     unknown authority",
                    self.ca.as_deref().unwrap_or("the system's roots")
                ),
                None => "the server takes only TLS: set `nats.tls` (its CA, a client \
                         certificate and key)"
                    .to_string(),
            }
        } else if lower.contains("notvalidforname") {
            "the server's certificate does not name the address's host: write the addresses \
             (`nats` endpoints) with a name or IP the certificate carries"
                .to_string()
        } else if lower.contains("certificaterequired")
            || (self.tls.is_some() && !self.mutual && lower.contains("alert"))
        {
            "the server requires a client certificate: set `nats.tls.cert` and `nats.tls.key`"
                .to_string()
        } else if lower.contains("alert") && lower.contains("certificate") {
            "the server refused the client certificate (`nats.tls.cert`): it must be signed by \
             the CA the servers trust, and not expired"
                .to_string()
        } else if self.tls.is_some()
            && (lower.contains("invalidcontenttype")
                || lower.contains("corrupt message")
                || lower.contains("invalidmessage"))
        {
            "the server does not speak TLS: remove `nats.tls`".to_string()
        } else if lower.contains("connection refused") {
            "nothing listens there: check the address and port in the `nats` endpoints".to_string()
        } else {
            return text;
        };
        format!("{fix} ({text})")
    }
}

/// `e` and its sources, one after the other (async-nats's own words are in the sources).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let said = s.to_string();
        if !out.contains(&said) {
            out.push_str(": ");
            out.push_str(&said);
        }
        next = s.source();
    }
    out
}

/// The last subject the server refused on a connection (see the module docs), and a wake-up
/// for whoever waits on it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Refusals {
    last: Arc<Mutex<Option<String>>>,
    said: Arc<Notify>,
}

impl Refusals {
    /// Records the server's error `e` when it refuses a subject.
    pub fn heard(&self, e: &async_nats::ServerError) {
        let text = e.to_string();
        if text.to_ascii_lowercase().contains("permissions violation") {
            *self.last.lock().expect("not poisoned") = Some(text);
            self.said.notify_waiters();
        }
    }

    /// Resolves with the refusal once the server refuses a subject.
    pub async fn refused(&self) -> String {
        loop {
            let notified = self.said.notified();
            if let Some(text) = self.last.lock().expect("not poisoned").clone() {
                return text;
            }
            notified.await;
        }
    }
}

/// What a refused subject on `bucket` means for the run.
pub(crate) fn refusal(bucket: &str, said: &str) -> String {
    format!(
        "the server refused lockbench's user a subject of bucket `{bucket}` ({said}): on a \
         secure cluster the user may use only the bucket `{default}`; set `nats.bucket` to \
         `{default}`, or grant the user the bucket's `$KV.{bucket}.>` and its stream's \
         `$JS.API` subjects",
        default = crate::knobs::DEFAULT_BUCKET
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tls_and_a_named_user_are_honoured() {
        let mut c = Connection {
            tls: Some(lockbench_core::Tls::default()),
            user: Some("lockbench".into()),
            password_env: Some("X".into()),
            ..Connection::default()
        };
        check("nats", &c).unwrap();
        c.tls.as_mut().unwrap().server_name = Some("nats.internal".into());
        let e = check("nats", &c).unwrap_err();
        assert!(e.starts_with("nats.tls.server_name"), "{e}");
        c.tls = None;
        c.user = None;
        let e = check("nats", &c).unwrap_err();
        assert!(e.contains("needs `user`"), "{e}");
        c.system.insert("chroot".into(), "/x".into());
        assert!(check("nats", &c).unwrap_err().starts_with("nats.chroot"));
    }

    #[test]
    fn the_debug_shows_no_password() {
        let login = Login {
            user: Some("lockbench".into()),
            password: Some("hunter2".to_string().into()),
            ..Login::default()
        };
        let shown = format!("{login:?}");
        assert!(
            !shown.contains("hunter2") && shown.contains("redacted"),
            "{shown}"
        );
    }
}
