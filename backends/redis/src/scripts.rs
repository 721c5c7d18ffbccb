//! The Lua scripts, and how they are sent.
//!
//! Each check-then-act step runs as one script so Redis executes it atomically: no other
//! client's command can land between the check and the act.
//!
//! Scripts are sent as `EVALSHA` (the hash, not the source, goes over the wire on every call).
//! The first call on a server that has not seen a script yet gets `NOSCRIPT`; the client then
//! sends `SCRIPT LOAD` and the `EVALSHA` again. That is what `redis::Script` does internally,
//! but it hides the extra requests; lockbench does the same steps itself so that
//! [`lockbench_core::LockClient::requests_sent`] counts every one of them.

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, RedisResult, Script, ServerErrorKind};
use std::sync::LazyLock;

/// `redis-setnx` acquire: `SET lock value NX PX ttl`, and only when that succeeded, `INCR` the
/// lock's fencing counter and return it. Returns 0 when the lock is held by someone else.
/// `KEYS = [lock, fence]`, `ARGV = [value, ttl_ms]`.
pub const ACQUIRE_NX: &str = "\
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0";

/// `redis-broken-nonx` acquire: the same script *without* `NX`, so it overwrites whoever holds
/// the lock. Deliberately broken; it exists so the checkers can be shown to catch it.
pub const ACQUIRE_NO_NX: &str = "\
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0";

/// Compare-and-delete: delete the lock only if it still holds our value. Returns 1 when it
/// did, 0 when the lock had expired or belongs to someone else. `KEYS = [lock]`,
/// `ARGV = [value]`.
pub const RELEASE: &str = "\
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0";

/// `redis-broken-release` release: a plain `DEL`, reported as success (1) whatever it deleted,
/// someone else's lock included. Deliberately broken; it exists so the release checker can be
/// shown to catch it. `KEYS = [lock]` (the value in `ARGV` is ignored).
pub const RELEASE_DEL: &str = "\
redis.call('DEL', KEYS[1])
return 1";

/// `redis-pubsub` release: compare-and-delete, then `PUBLISH` on the lock's release channel in
/// the same script, so no waiter can miss a release that happened. Returns 0 when the lock was
/// not ours, else 1 + the number of subscribers the server delivered the message to (Redis's
/// own count). `KEYS = [lock]`, `ARGV = [value, channel]`.
pub const RELEASE_PUBLISH: &str = "\
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1 + redis.call('PUBLISH', ARGV[2], 'released')
end
return 0";

/// Compare-and-`PEXPIRE`: reset the lock's TTL only if it still holds our value. Returns 1 or
/// 0 as [`RELEASE`] does. `KEYS = [lock]`, `ARGV = [value, ttl_ms]`.
pub const RENEW: &str = "\
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0";

/// `redis-broken-renew` renew: a plain `PEXPIRE`, without the compare, so it extends whoever
/// holds the lock, someone else's lock included; 1 when the key existed, 0 when it had gone.
/// Deliberately broken; it exists so the renew checker can be shown to catch it.
/// `KEYS = [lock]`, `ARGV = [value, ttl_ms]` (the value is ignored).
pub const RENEW_PEXPIRE: &str = "\
return redis.call('PEXPIRE', KEYS[1], ARGV[2])";

/// The scripts with their SHA1 hashes, computed once per process.
pub(crate) struct Scripts {
    pub(crate) acquire_nx: Script,
    pub(crate) acquire_no_nx: Script,
    pub(crate) release: Script,
    pub(crate) release_del: Script,
    pub(crate) renew: Script,
    pub(crate) renew_pexpire: Script,
    pub(crate) release_publish: Script,
}

/// The process-wide script table.
pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    acquire_nx: Script::new(ACQUIRE_NX),
    acquire_no_nx: Script::new(ACQUIRE_NO_NX),
    release: Script::new(RELEASE),
    release_del: Script::new(RELEASE_DEL),
    renew: Script::new(RENEW),
    renew_pexpire: Script::new(RENEW_PEXPIRE),
    release_publish: Script::new(RELEASE_PUBLISH),
});

/// Clears `cmd` (keeping its buffers) and starts `EVALSHA <hash> <numkeys>`; the caller adds
/// keys and arguments.
pub(crate) fn evalsha<'c>(cmd: &'c mut Cmd, script: &Script, numkeys: usize) -> &'c mut Cmd {
    cmd.clear();
    cmd.arg("EVALSHA").arg(script.get_hash()).arg(numkeys)
}

/// Sends the `EVALSHA` in `cmd`; on `NOSCRIPT` loads `script` and sends it again. Adds every
/// request written to `sent`.
pub(crate) async fn run<T: FromRedisValue>(
    conn: &mut (impl ConnectionLike + Send),
    cmd: &Cmd,
    script: &Script,
    sent: &mut u64,
) -> RedisResult<T> {
    *sent += 1;
    match cmd.query_async(conn).await {
        Err(e) if e.kind() == redis::ErrorKind::Server(ServerErrorKind::NoScript) => {
            *sent += 1;
            script.load_async(conn).await?;
            *sent += 1;
            cmd.query_async(conn).await
        }
        other => other,
    }
}
