//! How clients connect to one endpoint group beyond its addresses: TLS, credentials and the
//! settings only one system reads (ZooKeeper's chroot), as an external cluster file writes them.
//!
//! Why here: the settings travel with the addresses ([`crate::Endpoints`]) through every path
//! an address takes (the coordinator, the worker processes' job line, the observers and the
//! server counters), so they are vocabulary like the addresses. Core only holds and checks
//! their shape; each system's crate decides what it honours ([`crate::System::check_connection`])
//! and turns them into its client's own TLS and auth settings.
//!
//! **Secrets are never in the file nor in this value.** A password is named by where it is
//! (`password_env`, `password_file`), and read only when a client connects
//! ([`Connection::password`]), into a [`SecretString`]: it has no `Display` and its `Debug`
//! prints `[REDACTED]`, so neither a `{}` nor a `{:?}` in a log line, an error or a result can
//! show it. Errors about a secret name its source, never its content.

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// TLS settings of one group: the files to trust and to present, and the name to verify.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tls {
    /// The CA certificate (PEM) the servers' chains must end at; the system's roots when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<PathBuf>,
    /// The client certificate (PEM) for mutual TLS; with `key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM); with `cert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PathBuf>,
    /// The name the servers' certificates must carry, when it is not the address's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

impl Tls {
    /// `true` when a client certificate is presented (mutual TLS).
    pub fn mutual(&self) -> bool {
        self.cert.is_some()
    }
}

/// Everything about connecting to one group except its addresses. The default (nothing set) is
/// a plaintext connection without authentication, what a bare `host:port` list means.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    /// TLS, when the servers speak it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Tls>,
    /// The user to authenticate as (Redis ACL user, etcd user, ZooKeeper digest user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The environment variable holding the password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// The file holding the password (its first line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
    /// Settings only the group's system reads (ZooKeeper's `chroot`), checked by it.
    #[serde(flatten)]
    pub system: indexmap::IndexMap<String, String>,
}

/// What a run used to connect to one group, as `results.json` records it: enough to tell two
/// runs apart honestly, nothing secret.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionSummary {
    /// The clients spoke TLS.
    pub tls: bool,
    /// They presented a client certificate.
    pub mutual_tls: bool,
    /// They authenticated (a user or a password).
    pub auth: bool,
    /// The name the servers' certificates were verified against, when one was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

impl Connection {
    /// `true` when nothing is set (a bare address list).
    pub fn is_plain(&self) -> bool {
        *self == Connection::default()
    }

    /// `true` when the clients authenticate.
    pub fn has_auth(&self) -> bool {
        self.user.is_some() || self.password_env.is_some() || self.password_file.is_some()
    }

    /// What `results.json` records of these settings.
    pub fn summary(&self) -> ConnectionSummary {
        ConnectionSummary {
            tls: self.tls.is_some(),
            mutual_tls: self.tls.as_ref().is_some_and(Tls::mutual),
            auth: self.has_auth(),
            server_name: self.tls.as_ref().and_then(|t| t.server_name.clone()),
        }
    }

    /// Checks the settings' shape (what no system could use); `group` names the table in
    /// errors. What a system honours is its own check.
    pub fn check(&self, group: &str) -> Result<(), String> {
        if self.system.contains_key("password") {
            return Err(format!(
                "{group}.password: a password is never written in the cluster file (it would \
                 end up wherever the file goes): set `password_env` (an environment variable) \
                 or `password_file` (a file with the password on its first line) instead"
            ));
        }
        if let Some(tls) = &self.tls
            && tls.cert.is_some() != tls.key.is_some()
        {
            return Err(format!(
                "{group}.tls: `cert` and `key` go together (mutual TLS needs both the client \
                 certificate and its key)"
            ));
        }
        if self.password_env.is_some() && self.password_file.is_some() {
            return Err(format!(
                "{group}: set one of `password_env` and `password_file`, not both"
            ));
        }
        if self.user.is_some() && !self.has_password() {
            return Err(format!(
                "{group}: `user` needs a password: set `password_env` (an environment \
                 variable) or `password_file` (a file); a password is never written in the \
                 cluster file"
            ));
        }
        if let Some(name) = &self.password_env
            && name.is_empty()
        {
            return Err(format!("{group}.password_env: empty variable name"));
        }
        Ok(())
    }

    /// `true` when a password source is set.
    pub fn has_password(&self) -> bool {
        self.password_env.is_some() || self.password_file.is_some()
    }

    /// The setting the password is read from (`redis.password_env`, `redis.password_file`),
    /// for an error that must say where a wrong password came from; `None` when none is set.
    pub fn password_setting(&self, group: &str) -> Option<String> {
        match (&self.password_env, &self.password_file) {
            (Some(_), _) => Some(format!("{group}.password_env")),
            (None, Some(_)) => Some(format!("{group}.password_file")),
            (None, None) => None,
        }
    }

    /// Reads the password from its source (`None` when none is set). The error names the
    /// source and what is wrong with it, never what it holds.
    pub fn password(&self, group: &str) -> Result<Option<SecretString>, String> {
        if let Some(var) = &self.password_env {
            return match std::env::var(var) {
                Ok(v) if !v.is_empty() => Ok(Some(SecretString::from(v))),
                Ok(_) => Err(format!(
                    "{group}.password_env: environment variable `{var}` is empty: export the \
                     password in it"
                )),
                Err(_) => Err(format!(
                    "{group}.password_env: environment variable `{var}` is not set (or not \
                     UTF-8): export the password in it before running lockbench"
                )),
            };
        }
        if let Some(file) = &self.password_file {
            let text = std::fs::read_to_string(file).map_err(|e| {
                format!(
                    "{group}.password_file: cannot read {}: {} (the file holds the password \
                     on its first line)",
                    file.display(),
                    e.kind()
                )
            })?;
            let line = text.lines().next().unwrap_or("").trim_end_matches('\r');
            if line.is_empty() {
                return Err(format!(
                    "{group}.password_file: {} is empty: put the password on its first line",
                    file.display()
                ));
            }
            return Ok(Some(SecretString::from(line.to_string())));
        }
        Ok(None)
    }

    /// The user and its password, read from its source, when a user is set (`None` when not);
    /// the error names the source, never the password.
    pub fn credentials(&self, group: &str) -> Result<Option<(&str, SecretString)>, String> {
        let Some(user) = self.user.as_deref() else {
            return Ok(None);
        };
        let password = self.password(group)?.ok_or_else(|| {
            format!("{group}.user needs a password: set `password_env` or `password_file`")
        })?;
        Ok(Some((user, password)))
    }

    /// Makes the settings' relative paths relative to `dir` (the cluster file's directory),
    /// so a file works from wherever lockbench is started.
    pub fn resolve_paths(&mut self, dir: &Path) {
        let join = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        };
        if let Some(tls) = &mut self.tls {
            for p in [&mut tls.ca, &mut tls.cert, &mut tls.key]
                .into_iter()
                .flatten()
            {
                join(p);
            }
        }
        if let Some(p) = &mut self.password_file {
            join(p);
        }
    }

    /// Refuses a password without `user`, for a system that names every login (etcd, ZooKeeper's
    /// digest); `why` says how that system authenticates, so the error tells the user what to set.
    pub fn require_user_with_password(&self, group: &str, why: &str) -> Result<(), String> {
        if self.has_password() && self.user.is_none() {
            return Err(format!("{group}: a password needs `user` ({why})"));
        }
        Ok(())
    }

    /// Fails naming `setting` when this system cannot honour it yet: a setting silently
    /// ignored would measure a different connection than the file asks for.
    pub fn refuse(&self, group: &str, system: &str, allowed: &[&str]) -> Result<(), String> {
        let set = [
            ("tls", self.tls.is_some()),
            ("user", self.user.is_some()),
            ("password_env", self.password_env.is_some()),
            ("password_file", self.password_file.is_some()),
        ];
        let extra = self.system.keys().map(|k| (k.as_str(), true));
        for (setting, on) in set.into_iter().chain(extra) {
            if on && !allowed.contains(&setting) {
                return Err(format!(
                    "{group}.{setting}: lockbench's {system} clients do not support this \
                     setting (yet: see docs/secure-clusters.md); supported here: {}",
                    if allowed.is_empty() {
                        "none (a bare address list)".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    fn with_password_env(var: &str) -> Connection {
        Connection {
            user: Some("lockbench".into()),
            password_env: Some(var.into()),
            ..Connection::default()
        }
    }

    #[test]
    fn a_password_from_the_environment_never_prints() {
        // SAFETY: no other test reads or writes this variable.
        unsafe { std::env::set_var("LOCKBENCH_TEST_SECRET_A", "hunter2-Zq9") };
        let c = with_password_env("LOCKBENCH_TEST_SECRET_A");
        c.check("redis").unwrap();
        let secret = c.password("redis").unwrap().unwrap();
        assert_eq!(secret.expose_secret(), "hunter2-Zq9");
        let shown = format!("{secret:?} {c:?} {}", serde_json::to_string(&c).unwrap());
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn a_missing_secret_names_its_source() {
        let c = with_password_env("LOCKBENCH_TEST_SECRET_UNSET");
        let err = c.password("redis").unwrap_err();
        assert!(err.contains("redis.password_env") && err.contains("LOCKBENCH_TEST_SECRET_UNSET"));
        assert_eq!(
            c.password_setting("redis").as_deref(),
            Some("redis.password_env")
        );
        assert_eq!(Connection::default().password_setting("redis"), None);
        let dir = std::env::temp_dir().join(format!("lb-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pw"), "s3cret-line\nignored\n").unwrap();
        let mut c = Connection {
            password_file: Some("pw".into()),
            ..Connection::default()
        };
        c.resolve_paths(&dir);
        let s = c.password("etcd").unwrap().unwrap();
        assert_eq!(s.expose_secret(), "s3cret-line");
        assert_eq!(
            c.password_setting("etcd").as_deref(),
            Some("etcd.password_file")
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let err = c.password("etcd").unwrap_err();
        assert!(
            err.contains("etcd.password_file") && !err.contains("s3cret"),
            "{err}"
        );
    }

    #[test]
    fn a_password_without_a_user_is_refused_where_logins_are_named() {
        let mut c = with_password_env("LOCKBENCH_TEST_SECRET_UNSET");
        assert!(c.require_user_with_password("etcd", "why").is_ok());
        c.user = None;
        let err = c
            .require_user_with_password("etcd", "etcd names every login")
            .unwrap_err();
        assert!(
            err.starts_with("etcd: a password needs `user`") && err.contains("names every login"),
            "{err}"
        );
        assert!(
            Connection::default()
                .require_user_with_password("etcd", "why")
                .is_ok()
        );
    }

    #[test]
    fn shapes_no_system_could_use_are_refused() {
        let half = Connection {
            tls: Some(Tls {
                cert: Some("c.pem".into()),
                ..Tls::default()
            }),
            ..Connection::default()
        };
        assert!(half.check("etcd").unwrap_err().contains("etcd.tls"));
        let both = Connection {
            password_env: Some("A".into()),
            password_file: Some("b".into()),
            ..Connection::default()
        };
        assert!(both.check("redis").is_err());
        let user_only = Connection {
            user: Some("u".into()),
            ..Connection::default()
        };
        assert!(
            user_only
                .check("redis")
                .unwrap_err()
                .contains("password_env")
        );
        let err = both
            .refuse("zookeeper", "ZooKeeper", &["chroot"])
            .unwrap_err();
        assert!(err.contains("zookeeper.password_env"), "{err}");
    }

    #[test]
    fn the_summary_says_what_was_used() {
        let c = Connection {
            tls: Some(Tls {
                ca: Some("ca.pem".into()),
                cert: Some("c.pem".into()),
                key: Some("c.key".into()),
                server_name: Some("redis.internal".into()),
            }),
            ..with_password_env("X")
        };
        let s = c.summary();
        assert!(s.tls && s.mutual_tls && s.auth);
        assert_eq!(s.server_name.as_deref(), Some("redis.internal"));
        assert_eq!(
            Connection::default().summary(),
            ConnectionSummary::default()
        );
    }
}
