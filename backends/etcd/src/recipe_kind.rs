//! Which of etcd's lock recipes a backend runs, as a closed set.
//!
//! A backend is built from an open [`BackendKind`] (any system's recipe name), but once it is
//! an etcd backend only three recipes exist. Reading the kind once, in
//! [`RecipeKind::of`], turns an unknown name into an error that names the valid ones, and
//! lets every later choice (how waiters wait, what fences, which directory to observe) match
//! exhaustively instead of treating whatever is not recognised as the Lock API.

use crate::recipes::{ETCD_HERD, ETCD_LEASE, ETCD_LOCKAPI};
use lockbench_core::BackendKind;

/// One of etcd's lock recipes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecipeKind {
    /// `etcd-lease`: wait for the key with the next lower create revision.
    Lease,
    /// `etcd-lockapi`: the server-side v3 Lock API.
    LockApi,
    /// `etcd-herd`: every waiter watches the whole lock prefix.
    Herd,
}

impl RecipeKind {
    /// Every recipe, with its kind.
    const ALL: [(BackendKind, RecipeKind); 3] = [
        (ETCD_LEASE, RecipeKind::Lease),
        (ETCD_LOCKAPI, RecipeKind::LockApi),
        (ETCD_HERD, RecipeKind::Herd),
    ];

    /// The recipe `kind` names, or an error naming the etcd recipes.
    pub(crate) fn of(kind: BackendKind) -> Result<RecipeKind, String> {
        Self::ALL
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, r)| *r)
            .ok_or_else(|| {
                let names: Vec<String> = Self::ALL.iter().map(|(k, _)| k.to_string()).collect();
                format!(
                    "{kind} is not an etcd recipe (the etcd recipes: {})",
                    names.join(", ")
                )
            })
    }

    /// The directory under the prefix its lock keys live in.
    pub(crate) fn dir(self) -> &'static str {
        match self {
            RecipeKind::Lease => "lease",
            RecipeKind::LockApi => "lockapi",
            RecipeKind::Herd => "herd",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_kind_is_an_error_naming_the_recipes() {
        assert_eq!(RecipeKind::of(ETCD_LOCKAPI), Ok(RecipeKind::LockApi));
        let err = RecipeKind::of(BackendKind::of("etcd-leese")).unwrap_err();
        assert!(err.contains("etcd-lease, etcd-lockapi, etcd-herd"), "{err}");
    }
}
