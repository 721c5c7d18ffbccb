//! The clock-jump *emulation* on a Redis server.
//!
//! A forward jump of D in a Redis server's clock makes every key's remaining TTL D shorter
//! (keys whose TTL is at most D expire at once); nothing else a lock client can observe
//! changes. libfaketime crashes Redis here (it clashes with jemalloc), so the jump is emulated
//! exactly that way, atomically, by one Lua script: SCAN every key, and for each key with a
//! TTL, `PEXPIRE` it to `PTTL - D`, or `DEL` it when that is `<= 0`. Keys without a TTL (the
//! fencing counters) are left alone. Results name it an emulation.

use crate::Reach;
use crate::probe;
use lockbench_cluster::ServerSpec;
use std::time::Duration;

const SCRIPT: &str = r#"
local by = tonumber(ARGV[1])
local cursor = "0"
local shortened, deleted = 0, 0
repeat
  local r = redis.call('SCAN', cursor, 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    local t = redis.call('PTTL', k)
    if t > 0 then
      if t <= by then
        redis.call('DEL', k)
        deleted = deleted + 1
      else
        redis.call('PEXPIRE', k, t - by)
        shortened = shortened + 1
      end
    end
  end
until cursor == "0"
return {shortened, deleted}
"#;

/// Shortens every TTL on `spec` by `by`; returns (keys shortened, keys deleted).
pub(crate) async fn jump(
    reach: &dyn Reach,
    spec: &ServerSpec,
    by: Duration,
) -> anyhow::Result<(i64, i64)> {
    let ms = by.as_millis().max(1).to_string();
    let r = probe::redis_eval(reach, spec, SCRIPT, &[ms]).await?;
    match r.as_slice() {
        [s, d] => Ok((*s, *d)),
        other => anyhow::bail!("unexpected reply {other:?}"),
    }
}
