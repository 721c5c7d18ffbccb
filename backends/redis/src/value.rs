//! The value a client writes into a lock key, and the names of the keys.
//!
//! The value must be unique per grant, so that compare-and-delete removes only the grant it was
//! handed for and never a later one (of this or any other client). It is the client's nonce,
//! 32 hex digits: the client id (8, so the server-side observer can name the holder from the
//! value, `observe`) and 24 random ones (96 bits of a v4 UUID, from the OS's random source:
//! an identity, not a schedule choice, so it need not be reproducible), followed by `:` and
//! the client's grant counter. It lives in a fixed-size array, so making one allocates nothing.

use lockbench_core::KeyId;
use std::borrow::Cow;
use std::fmt;

const NONCE: usize = 32;
const CAP: usize = NONCE + 1 + 20;

/// One grant's lock value: `<client uuid, 32 hex digits>:<grant number>`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LockValue {
    bytes: [u8; CAP],
    len: u8,
}

/// A client's identity, the first half of each of its lock values.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Nonce([u8; NONCE]);

impl Nonce {
    /// A fresh nonce for `client`: its id in hex, then random hex digits.
    pub(crate) fn of(client: lockbench_core::ClientId) -> Nonce {
        let mut hex = [0u8; NONCE];
        uuid::Uuid::new_v4().simple().encode_lower(&mut hex);
        hex[..8].copy_from_slice(&lockbench_core::server_view::client_hex(client));
        Nonce(hex)
    }
}

impl LockValue {
    /// The value of grant number `grant` of the client with identity `nonce`.
    pub(crate) fn new(nonce: &Nonce, grant: u64) -> LockValue {
        let mut bytes = [0u8; CAP];
        bytes[..NONCE].copy_from_slice(&nonce.0);
        bytes[NONCE] = b':';
        let mut digits = [0u8; 20];
        let mut n = grant;
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let tail = &digits[i..];
        bytes[NONCE + 1..NONCE + 1 + tail.len()].copy_from_slice(tail);
        LockValue {
            bytes,
            len: (NONCE + 1 + tail.len()) as u8,
        }
    }

    /// The bytes written to Redis.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl fmt::Debug for LockValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(std::str::from_utf8(self.as_bytes()).unwrap_or("<bad utf-8>"))
    }
}

/// Key names for every lock of a run, made once when the backend is built so the client loop
/// never formats a string. `KeyId(i)` maps to `<prefix>lock:<i>`, its fencing counter to
/// `<prefix>fence:<i>` and its release channel (`redis-pubsub`) to `<prefix>released:<i>`.
#[derive(Debug)]
pub(crate) struct KeyTable {
    prefix: String,
    lock: Vec<String>,
    fence: Vec<String>,
    channel: Vec<String>,
}

impl KeyTable {
    /// Names for keys `0..keys`.
    pub(crate) fn new(prefix: &str, keys: u32) -> KeyTable {
        KeyTable {
            prefix: prefix.to_string(),
            lock: (0..keys).map(|i| format!("{prefix}lock:{i}")).collect(),
            fence: (0..keys).map(|i| format!("{prefix}fence:{i}")).collect(),
            channel: (0..keys).map(|i| format!("{prefix}released:{i}")).collect(),
        }
    }

    /// The lock key of `key` (formatted on the spot only for ids beyond the table).
    pub(crate) fn lock(&self, key: KeyId) -> Cow<'_, str> {
        match self.lock.get(key.0 as usize) {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Owned(format!("{}lock:{}", self.prefix, key.0)),
        }
    }

    /// What every lock key's name starts with (`<prefix>lock:`).
    pub(crate) fn lock_prefix(&self) -> String {
        format!("{}lock:", self.prefix)
    }

    /// The key whose lock key is named `name`.
    pub(crate) fn key_of(&self, name: &str) -> Option<KeyId> {
        let index = name.strip_prefix(&self.prefix)?.strip_prefix("lock:")?;
        index.parse().ok().map(KeyId)
    }

    /// The fencing counter key of `key`.
    pub(crate) fn fence(&self, key: KeyId) -> Cow<'_, str> {
        match self.fence.get(key.0 as usize) {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Owned(format!("{}fence:{}", self.prefix, key.0)),
        }
    }

    /// The pub/sub channel a release of `key` is announced on.
    pub(crate) fn channel(&self, key: KeyId) -> Cow<'_, str> {
        match self.channel.get(key.0 as usize) {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Owned(format!("{}released:{}", self.prefix, key.0)),
        }
    }

    /// The channels of keys `0..keys` (for `PUBSUB NUMSUB`).
    pub(crate) fn channels(&self) -> &[String] {
        &self.channel
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_uuid_colon_counter() {
        let nonce = Nonce([b'a'; NONCE]);
        let v = LockValue::new(&nonce, 0);
        assert_eq!(v.as_bytes(), format!("{}:0", "a".repeat(32)).as_bytes());
        let v = LockValue::new(&nonce, u64::MAX);
        assert_eq!(
            v.as_bytes(),
            format!("{}:{}", "a".repeat(32), u64::MAX).as_bytes()
        );
        assert_ne!(LockValue::new(&nonce, 1), LockValue::new(&nonce, 2));
    }

    #[test]
    fn a_nonce_starts_with_its_client() {
        let client = lockbench_core::ClientId(0x2a);
        let v = LockValue::new(&Nonce::of(client), 3);
        let parsed = lockbench_core::server_view::parse_client_hex(v.as_bytes());
        assert_eq!(parsed, Some(client));
        assert_ne!(Nonce::of(client).0, Nonce::of(client).0);
    }

    #[test]
    fn keys_beyond_the_table_get_the_same_names() {
        let t = KeyTable::new("p:", 2);
        assert_eq!(t.lock(KeyId(1)), "p:lock:1");
        assert_eq!(t.lock(KeyId(5)), "p:lock:5");
        assert_eq!(t.fence(KeyId(5)), "p:fence:5");
        assert_eq!(t.channel(KeyId(1)), "p:released:1");
        assert_eq!(t.channel(KeyId(5)), "p:released:5");
        assert_eq!(t.key_of("p:lock:5"), Some(KeyId(5)));
        assert_eq!(t.key_of("p:fence:5"), None);
        assert_eq!(t.lock_prefix(), "p:lock:");
    }
}
