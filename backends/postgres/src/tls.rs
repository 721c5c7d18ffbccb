//! TLS and the password of the PostgreSQL clients: the `postgres` group's connection
//! settings (`tls`, `user`, `password_env` / `password_file`) turned into tokio-postgres's, and
//! a failed connect turned into an error that names the server, the setting and the fix.
//!
//! Why rustls through `tokio-postgres-rustls` with lockbench's own config
//! ([`lockbench_core::crypto::client_config`]): the same CA, client certificate and key files
//! are read the same way as for etcd and ZooKeeper, and errors name them alike. TLS is
//! `sslmode=require` with the certificate verified against the host (or `server_name`): rustls
//! always verifies, so it is libpq's `verify-full`.
//!
//! What each misconfiguration looks like to tokio-postgres, and what the error says:
//! - a wrong CA: the handshake fails with rustls's `UnknownIssuer` → `postgres.tls.ca`;
//! - TLS against a server without TLS (`ssl = off`): it answers the SSLRequest with `N`,
//!   "server does not support TLS" → the server does not speak TLS, drop `postgres.tls`;
//! - plaintext against a server that takes only `hostssl`: FATAL 28000 "no pg_hba.conf entry
//!   for ... no encryption" → set `postgres.tls`;
//! - a wrong password: FATAL 28P01 → the user and where the password came from.
//!
//! The password is read once, when the backend is made, into a [`SecretString`]; tokio-postgres
//! holds its copy in its `Config`, whose `Debug` redacts it. No error shows it.

use lockbench_core::traits::BackendError;
use lockbench_core::{Connection, Tls};
use secrecy::{ExposeSecret, SecretString};
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The settings the clients honour, for [`System::check_connection`](lockbench_core::System::check_connection):
/// TLS (a CA, a client certificate, the name to verify) and a user with a password; the shape
/// only (files and password are read when a backend is made). A password needs `user`:
/// PostgreSQL authenticates a role by name.
pub(crate) fn check(group: &str, c: &Connection) -> Result<(), String> {
    let honoured = ["tls", "user", "password_env", "password_file"];
    c.refuse(group, "postgres", &honoured)?;
    let why = "PostgreSQL authenticates a role by name; without `user` the `postgres.user` knob \
               names it, and a password alone would go to a user this file does not name";
    c.require_user_with_password(group, why)
}

/// The TLS connector: rustls with the group's config, verifying `server_name` instead of the
/// address's host when one is set.
#[derive(Clone)]
pub(crate) struct PgTls {
    inner: MakeRustlsConnect,
    server_name: Option<String>,
}

impl std::fmt::Debug for PgTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTls")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl<S> MakeTlsConnect<S> for PgTls
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    type Stream = <MakeRustlsConnect as MakeTlsConnect<S>>::Stream;
    type TlsConnect = <MakeRustlsConnect as MakeTlsConnect<S>>::TlsConnect;
    type Error = <MakeRustlsConnect as MakeTlsConnect<S>>::Error;

    fn make_tls_connect(&mut self, hostname: &str) -> Result<Self::TlsConnect, Self::Error> {
        let name = self.server_name.as_deref().unwrap_or(hostname);
        MakeTlsConnect::<S>::make_tls_connect(&mut self.inner, name)
    }
}

/// What the clients of one group connect with beyond addresses: TLS, the user, its password.
#[derive(Clone, Debug, Default)]
pub(crate) struct Security {
    /// `group` as the settings are named in errors (`postgres`).
    group: String,
    /// TLS, when `tls` is set.
    pub(crate) tls: Option<PgTls>,
    /// The settings, for naming them in errors.
    settings: Connection,
    /// The user (the group's `user`, else the `postgres.user` knob) and its password.
    pub(crate) password: Option<SecretString>,
}

impl Security {
    /// From `group`'s settings: builds the TLS config (reading its files) and reads the
    /// password; errors name the setting.
    pub(crate) fn new(group: &str, c: &Connection) -> Result<Security, BackendError> {
        let bad = |e: String| BackendError::Config(e);
        c.check(group).map_err(bad)?;
        let tls = match &c.tls {
            Some(t) => {
                lockbench_core::crypto::install_ring();
                let config = lockbench_core::crypto::client_config(group, t).map_err(bad)?;
                Some(PgTls {
                    inner: MakeRustlsConnect::new(config),
                    server_name: t.server_name.clone(),
                })
            }
            None => None,
        };
        Ok(Security {
            group: group.into(),
            tls,
            settings: c.clone(),
            password: c.password(group).map_err(bad)?,
        })
    }

    /// The user the settings name, if any (it wins over the `postgres.user` knob).
    pub(crate) fn user(&self) -> Option<&str> {
        self.settings.user.as_deref()
    }

    /// Sets the password and TLS mode on `config`.
    pub(crate) fn apply(&self, config: &mut tokio_postgres::Config) {
        if let Some(pw) = &self.password {
            config.password(pw.expose_secret());
        }
        if self.tls.is_some() {
            config.ssl_mode(tokio_postgres::config::SslMode::Require);
        }
    }

    /// Where the password came from, as the settings name it.
    fn password_source(&self) -> String {
        let g = &self.group;
        match (&self.settings.password_env, &self.settings.password_file) {
            (Some(var), _) => format!("{g}.password_env (`{var}`)"),
            (_, Some(file)) => format!("{g}.password_file ({})", file.display()),
            _ => format!("no password set ({g}.password_env or {g}.password_file)"),
        }
    }

    /// What a failed connect to `servers` as `user` means for these settings: the server, the
    /// setting and the fix, when the error is a TLS or authentication one; `None` otherwise.
    pub(crate) fn explain(
        &self,
        servers: &str,
        user: &str,
        e: &tokio_postgres::Error,
    ) -> Option<String> {
        let g = &self.group;
        let said = chain(e);
        if let Some(db) = e.as_db_error() {
            let code = db.code().code();
            let msg = db.message();
            if code == "28P01" {
                return Some(format!(
                    "postgres {servers}: password authentication failed for user `{user}`: \
                     the password from {} is not that user's: put the right one there",
                    self.password_source()
                ));
            }
            if code == "28000" && msg.contains("no encryption") && self.tls.is_none() {
                return Some(format!(
                    "postgres {servers}: the server takes only TLS connections (its pg_hba.conf \
                     has no plaintext entry for user `{user}`: \"{msg}\"): set `{g}.tls` (with \
                     `ca` = the CA that signed the server's certificate)"
                ));
            }
            if code == "28000" && msg.contains("certificate") {
                return Some(format!(
                    "postgres {servers}: the server refused the connection for its client \
                     certificate (\"{msg}\"): set `{g}.tls.cert` and `{g}.tls.key` to a \
                     certificate its CA signed whose common name is the user `{user}`"
                ));
            }
            return None;
        }
        if self.tls.is_some() && said.contains("server does not support TLS") {
            return Some(format!(
                "postgres {servers}: the server does not speak TLS (it refused the SSLRequest: \
                 `ssl = off`): remove `{g}.tls`, or turn on `ssl` in its postgresql.conf"
            ));
        }
        if said.contains("password missing") {
            return Some(format!(
                "postgres {servers}: the server asks user `{user}` for a password and none is \
                 set: set `{g}.password_env` or `{g}.password_file`"
            ));
        }
        // Only the handshake's own failures are the TLS settings' (a refused connect, a
        // read-only replica's refusal are not: they keep their own words).
        if !said.starts_with("error performing TLS handshake") {
            return None;
        }
        let io = io_source(e)?;
        let tls = self.settings.tls.as_ref()?;
        let (refusal, said) = lockbench_core::tls_failure::classify(io, true)?;
        Some(tls_fix(g, servers, tls, refusal, &said))
    }
}

/// `e` and its causes, as tokio-postgres's own text leaves them out ("error performing TLS
/// handshake" for "server does not support TLS").
fn chain(e: &tokio_postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// The I/O error under `e` (the TLS handshake's), if any.
fn io_source(e: &tokio_postgres::Error) -> Option<&std::io::Error> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = s.source();
    }
    None
}

/// The words for a TLS refusal.
fn tls_fix(
    g: &str,
    servers: &str,
    tls: &Tls,
    refusal: lockbench_core::tls_failure::Refusal,
    said: &str,
) -> String {
    use lockbench_core::tls_failure::Refusal;
    let file = |p: &Option<std::path::PathBuf>| {
        p.as_ref().map_or("(none: the system's roots)".into(), |p| {
            p.display().to_string()
        })
    };
    match refusal {
        Refusal::UnknownIssuer => format!(
            "postgres {servers}: certificate signed by unknown authority: the server's chain \
             does not end at {g}.tls.ca = {}: set it to the CA that signed the server's \
             certificate ({said})",
            file(&tls.ca)
        ),
        Refusal::NotValidForName => format!(
            "postgres {servers}: the server's certificate does not name the host dialled{}: \
             set `{g}.tls.server_name` to a name it carries ({said})",
            tls.server_name
                .as_ref()
                .map_or(String::new(), |n| format!(" nor {g}.tls.server_name = {n}"))
        ),
        Refusal::ServerExpired => format!(
            "postgres {servers}: the server's certificate has expired (or the clocks \
             disagree): renew it ({said})"
        ),
        Refusal::CertificateRequired => format!(
            "postgres {servers}: the server requires a client certificate: set \
             `{g}.tls.cert` and `{g}.tls.key` ({said})"
        ),
        Refusal::ClientRefused => format!(
            "postgres {servers}: the server refused the client certificate {g}.tls.cert = {}: \
             use one its CA signed and still valid ({said})",
            file(&tls.cert)
        ),
        Refusal::NotTls => {
            format!("postgres {servers}: the server does not speak TLS: remove `{g}.tls` ({said})")
        }
        Refusal::HandshakeFailed => {
            format!("postgres {servers}: TLS handshake failed: check `{g}.tls` ({said})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the clients honour passes; a setting they do not (a chroot) and a password
    /// without a user fail naming the setting.
    #[test]
    fn the_settings_check_names_what_it_refuses() {
        let mut c = Connection {
            tls: Some(Tls::default()),
            user: Some("lockbench".into()),
            password_env: Some("PW".into()),
            ..Connection::default()
        };
        check("postgres", &c).unwrap();
        c.user = None;
        let e = check("postgres", &c).unwrap_err();
        assert!(e.contains("needs `user`"), "{e}");
        c.user = Some("lockbench".into());
        c.system.insert("chroot".into(), "/x".into());
        let e = check("postgres", &c).unwrap_err();
        assert!(e.contains("postgres.chroot"), "{e}");
    }
}
