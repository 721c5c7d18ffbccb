//! The three advisory-lock recipes: how each takes, holds and gives back a lock.
//!
//! All three use the same lock (`(namespace, key)` in the server's lock table, tied to a
//! session or a transaction), the same token and the same observer; they differ in how a
//! waiter waits and what holds the lock:
//!
//! - `pg-advisory`: session-level `pg_advisory_lock`, the waiter queued *in the server* until
//!   the lock is free or `lock_timeout` passes; released by `pg_advisory_unlock`.
//! - `pg-try-advisory`: `pg_try_advisory_lock` polled every `poll_interval + U[0,
//!   poll_jitter)`, as job queues do (GoodJob, Oban); released the same way.
//! - `pg-advisory-xact`: `pg_advisory_xact_lock` inside an open transaction, released by
//!   `COMMIT` (Flyway-style migrations, `with_advisory_lock`'s transaction mode): the lock
//!   holds a transaction open, with what that costs the server (its snapshot holds back
//!   vacuum).

use lockbench_core::BackendKind;

/// Which advisory-lock recipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PgRecipe {
    /// Session-level `pg_advisory_lock` under `lock_timeout`.
    Advisory,
    /// Polling `pg_try_advisory_lock`.
    TryAdvisory,
    /// `pg_advisory_xact_lock` held by an open transaction.
    Xact,
}

impl PgRecipe {
    /// Every recipe, in the order results list them.
    pub const ALL: [PgRecipe; 3] = [PgRecipe::Advisory, PgRecipe::TryAdvisory, PgRecipe::Xact];

    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            PgRecipe::Advisory => "pg-advisory",
            PgRecipe::TryAdvisory => "pg-try-advisory",
            PgRecipe::Xact => "pg-advisory-xact",
        }
    }

    /// The recipe's kind, as results name it.
    pub fn kind(self) -> BackendKind {
        BackendKind::of(self.name())
    }

    /// How a waiter learns the lock is free.
    pub(crate) fn waits_by(self, knobs: &crate::PostgresKnobs) -> String {
        match self {
            PgRecipe::Advisory => format!(
                "queued in the server: pg_advisory_lock blocks until the holder's unlock or \
                 session end wakes it (lock_timeout {:?}, then the acquire fails timeout)",
                knobs.lock_timeout
            ),
            PgRecipe::TryAdvisory => format!(
                "polling: pg_try_advisory_lock, then sleep {:?} + U[0, {:?}) after a refusal",
                knobs.poll_interval, knobs.poll_jitter
            ),
            PgRecipe::Xact => format!(
                "queued in the server: BEGIN + pg_advisory_xact_lock blocks until the holder's \
                 COMMIT or session end (lock_timeout {:?}, then ROLLBACK and fail timeout)",
                knobs.lock_timeout
            ),
        }
    }
}

impl std::fmt::Display for PgRecipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
