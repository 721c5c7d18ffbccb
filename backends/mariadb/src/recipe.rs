//! The two named-lock recipes: how each takes, holds and gives back a lock.
//!
//! Both use the same lock (a name in the server's lock table, tied to a session), the same
//! token and the same observer; they differ in how a waiter waits:
//!
//! - `mariadb-get-lock`: `GET_LOCK(name, lock_timeout)`, the waiter queued *in the server*
//!   until the lock is free or the timeout passes; released by `RELEASE_LOCK`.
//! - `mariadb-try-lock`: `GET_LOCK(name, 0)` polled every `poll_interval + U[0,
//!   poll_jitter)`, as job runners that must not block a worker do; released the same way.

use lockbench_core::BackendKind;

/// Which named-lock recipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MariaRecipe {
    /// `GET_LOCK` waiting in the server up to `lock_timeout`.
    GetLock,
    /// Polling `GET_LOCK(name, 0)`.
    TryLock,
}

impl MariaRecipe {
    /// Every recipe, in the order results list them.
    pub const ALL: [MariaRecipe; 2] = [MariaRecipe::GetLock, MariaRecipe::TryLock];

    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            MariaRecipe::GetLock => "mariadb-get-lock",
            MariaRecipe::TryLock => "mariadb-try-lock",
        }
    }

    /// The recipe's kind, as results name it.
    pub fn kind(self) -> BackendKind {
        BackendKind::of(self.name())
    }

    /// How a waiter learns the lock is free.
    pub(crate) fn waits_by(self, knobs: &crate::MariadbKnobs) -> String {
        match self {
            MariaRecipe::GetLock => format!(
                "queued in the server: GET_LOCK blocks until the holder's RELEASE_LOCK or \
                 session end wakes it (lock_timeout {:?}, then the acquire fails timeout)",
                knobs.lock_timeout
            ),
            MariaRecipe::TryLock => format!(
                "polling: GET_LOCK(name, 0), then sleep {:?} + U[0, {:?}) after a refusal",
                knobs.poll_interval, knobs.poll_jitter
            ),
        }
    }
}

impl std::fmt::Display for MariaRecipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
