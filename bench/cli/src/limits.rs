//! Process limits raised at start-up.
//!
//! Every lockbench client owns its sessions and connections (an etcd client alone holds one
//! TCP connection per member, a redis-pubsub client two), so 1,000 clients need several
//! thousand file descriptors, past the usual soft limit of 1,024. The soft `RLIMIT_NOFILE` is
//! raised to the hard limit once, before anything connects; if the hard limit is still too
//! low, connects fail with "too many open files" naming the address, and `ulimit -Hn` is the
//! knob.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Raises the soft open-files limit to the hard one. Returns the limit now in force.
pub fn raise_open_files() -> Option<u64> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return Some(hard);
    }
    Some(soft)
}
