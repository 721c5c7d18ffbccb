//! The protected resource: a per-key register that checks fencing tokens.
//!
//! Each key's highest token seen is an atomic, and `fetch_max` both records a token and returns
//! the previous highest in one step, so deciding "stale or not" is race-free without a lock even
//! with every client writing at once.

use lockbench_core::scenario::ResourceMode;
use lockbench_core::{FencingToken, KeyId};
use std::sync::atomic::{AtomicU64, Ordering};

/// What the resource made of one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteVerdict {
    /// The write took effect.
    pub accepted: bool,
    /// A higher token had been seen before this one; `None` when the write had no token.
    pub stale: Option<bool>,
}

/// Per-key highest-token registers, in fenced or unfenced mode.
#[derive(Debug)]
pub struct FencedResource {
    mode: ResourceMode,
    highest: Box<[AtomicU64]>,
}

impl FencedResource {
    /// A resource for `keys` lock keys.
    pub fn new(mode: ResourceMode, keys: u32) -> FencedResource {
        FencedResource {
            mode,
            highest: (0..keys).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Writes with `token` to `key`. Fenced mode rejects a stale token; unfenced mode accepts
    /// everything but still reports staleness. A write without a token cannot be judged and is
    /// always accepted.
    pub fn write(&self, key: KeyId, token: Option<FencingToken>) -> WriteVerdict {
        let Some(FencingToken(t)) = token else {
            return WriteVerdict {
                accepted: true,
                stale: None,
            };
        };
        let previous = self.highest[key.0 as usize].fetch_max(t, Ordering::AcqRel);
        let stale = t < previous;
        WriteVerdict {
            accepted: !(stale && self.mode == ResourceMode::Fenced),
            stale: Some(stale),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_mode_rejects_lower_tokens_and_unfenced_accepts_but_flags_them() {
        let fenced = FencedResource::new(ResourceMode::Fenced, 2);
        let t = |n| Some(FencingToken(n));
        assert_eq!(
            fenced.write(KeyId(0), t(5)),
            WriteVerdict {
                accepted: true,
                stale: Some(false)
            }
        );
        assert_eq!(
            fenced.write(KeyId(0), t(5)),
            WriteVerdict {
                accepted: true,
                stale: Some(false)
            }
        );
        assert_eq!(
            fenced.write(KeyId(0), t(3)),
            WriteVerdict {
                accepted: false,
                stale: Some(true)
            }
        );
        assert_eq!(
            fenced.write(KeyId(1), t(3)),
            WriteVerdict {
                accepted: true,
                stale: Some(false)
            }
        );
        let unfenced = FencedResource::new(ResourceMode::Unfenced, 1);
        unfenced.write(KeyId(0), t(9));
        assert_eq!(
            unfenced.write(KeyId(0), t(2)),
            WriteVerdict {
                accepted: true,
                stale: Some(true)
            }
        );
        assert_eq!(
            unfenced.write(KeyId(0), None),
            WriteVerdict {
                accepted: true,
                stale: None
            }
        );
    }
}
