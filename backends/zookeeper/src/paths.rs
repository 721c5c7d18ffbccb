//! Lock paths, computed once per client rather than once per acquisition.
//!
//! The hot path must not format strings (DESIGN §3), so each client builds the paths it needs
//! for every key of the scenario when it connects. A key beyond the scenario's key count (tests
//! use a few fixed ids) is added on first use.

/// Checks a `root` knob: an absolute ZooKeeper path without a trailing slash (`/` itself is
/// allowed and means "directly under the root").
pub(crate) fn check_root(root: &str) -> Result<&str, String> {
    let trimmed = if root == "/" { "" } else { root };
    let valid = root.starts_with('/')
        && !trimmed.ends_with('/')
        && !trimmed.contains("//")
        && !trimmed.split('/').any(|part| part == "." || part == "..");
    if valid {
        Ok(trimmed)
    } else {
        Err(format!(
            "zookeeper.root = {root:?} is not an absolute ZooKeeper path like \"/lockbench\""
        ))
    }
}

/// A table of per-key strings built by `make(key)`, grown on demand.
#[derive(Debug)]
pub(crate) struct KeyTable<T> {
    entries: Vec<T>,
}

impl<T> KeyTable<T> {
    /// Builds entries for keys `0..keys`.
    pub(crate) fn new(keys: u32, make: impl Fn(u32) -> T) -> Self {
        KeyTable {
            entries: (0..keys).map(make).collect(),
        }
    }

    /// The entry for `key`, building any missing entries up to it first.
    pub(crate) fn get(&mut self, key: u32, make: impl Fn(u32) -> T) -> &T {
        let index = key as usize;
        while self.entries.len() <= index {
            let next = self.entries.len() as u32;
            self.entries.push(make(next));
        }
        &self.entries[index]
    }
}

/// The sequence number at the end of a sequential node's name (`lock-…-0000000042` → 42), or
/// `None` for a name that has none. A name without a dash before its digits ends in the ten
/// digits ZooKeeper appends (kazoo's `…__lock__0000000042`, read by the adapters' observer).
pub(crate) fn sequence_of(name: &str) -> Option<i64> {
    let digits = match name.rsplit_once('-') {
        Some((_, digits)) => digits,
        None => name.get(name.len().checked_sub(10)?..)?,
    };
    if digits.len() < 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots() {
        assert_eq!(check_root("/lockbench"), Ok("/lockbench"));
        assert_eq!(check_root("/a/b"), Ok("/a/b"));
        assert_eq!(check_root("/"), Ok(""));
        assert!(check_root("lockbench").is_err());
        assert!(check_root("/lockbench/").is_err());
        assert!(check_root("/a//b").is_err());
        assert!(check_root("/a/../b").is_err());
    }

    #[test]
    fn sequences() {
        assert_eq!(sequence_of("lock-abc-0000000042"), Some(42));
        assert_eq!(sequence_of("_c_1b4e-28ba-lock-0000000007"), Some(7));
        assert_eq!(sequence_of("lock-abc-0000000000000000042"), Some(42));
        assert_eq!(sequence_of("lock-abc-42"), None);
        assert_eq!(sequence_of("nodash"), None);
        assert_eq!(sequence_of("9f0c2e__lock__0000000042"), Some(42));
        assert_eq!(sequence_of("9f0c2e__lock__00000042"), None);
        assert_eq!(sequence_of("lock-abc-00000000xx"), None);
    }
}
