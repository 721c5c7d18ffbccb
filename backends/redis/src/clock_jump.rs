//! The clock-jump *emulation* on a Redis server ([`System::clock_jump`] of
//! [`Redis`](crate::system::Redis)).
//!
//! A forward jump of D in a Redis server's clock makes every key's remaining TTL D shorter
//! (keys whose TTL is at most D expire at once); nothing else a lock client can observe
//! changes. libfaketime crashes Redis here (it clashes with jemalloc), so the jump is emulated
//! exactly that way, atomically, by one Lua script: SCAN every key, and for each key with a
//! TTL, `PEXPIRE` it to `PTTL - D`, or `DEL` it when that is `<= 0`. Keys without a TTL (the
//! fencing counters) are left alone. Results name it an emulation.
//!
//! [`System::clock_jump`]: lockbench_core::System::clock_jump

use crate::admin_eval;
use lockbench_core::{ClockJump, Pending, ServerAccess, ServerSpec};
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

/// Every TTL shortened by the jump.
pub(crate) struct TtlJump;

impl ClockJump for TtlJump {
    fn jump<'a>(
        &'a self,
        access: &'a dyn ServerAccess,
        spec: &'static ServerSpec,
        by: Duration,
    ) -> Pending<'a, Result<String, String>> {
        Box::pin(async move {
            let (shortened, expired) = shorten(access, spec, by).await?;
            Ok(format!(
                "{shortened} keys' PTTL shortened, {expired} expired"
            ))
        })
    }

    fn how(&self, by: Duration) -> String {
        format!(
            "EMULATED forward clock jump of {by:?} (the server's clock is unchanged: every key \
             with a TTL had its remaining TTL shortened by {by:?}, atomically)"
        )
    }

    fn elsewhere(&self) -> &'static str {
        "the clock-jump emulation exists for Redis servers only"
    }
}

/// Shortens every TTL on `spec` by `by`; returns (keys shortened, keys deleted).
async fn shorten(
    access: &dyn ServerAccess,
    spec: &'static ServerSpec,
    by: Duration,
) -> Result<(i64, i64), String> {
    let ms = by.as_millis().max(1).to_string();
    let r = admin_eval::eval(access, spec, SCRIPT, &[ms]).await?;
    match r.as_slice() {
        [s, d] => Ok((*s, *d)),
        other => Err(format!("unexpected reply {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canned_access::CannedAccess;
    use crate::system::Redis;
    use lockbench_core::{Login, System};

    #[tokio::test]
    async fn a_jump_shortens_every_ttl_by_one_script_as_the_administrator() {
        let access = CannedAccess::new(|_, _| Ok(b"*2\r\n:12\r\n:1\r\n".to_vec()));
        let redis = &Redis.servers()[0];
        let jump = Redis.clock_jump().expect("Redis jumps");
        let done = jump.jump(&access, redis, Duration::from_secs(3)).await;
        assert_eq!(done.as_deref(), Ok("12 keys' PTTL shortened, 1 expired"));
        let asked = access.asked.lock().unwrap();
        let (_, request, login) = &asked[0];
        assert_eq!(*login, Login::Admin);
        assert!(request.starts_with("*4\r\n$4\r\nEVAL\r\n"), "{request:?}");
        assert!(
            request.ends_with("$1\r\n0\r\n$4\r\n3000\r\n"),
            "{request:?}"
        );
        assert!(
            jump.how(Duration::from_secs(3))
                .starts_with("EMULATED forward clock jump of 3s")
        );
    }

    #[tokio::test]
    async fn an_error_reply_fails_the_jump() {
        let access = CannedAccess::new(|_, _| Ok(b"-NOPERM no\r\n".to_vec()));
        let done = TtlJump
            .jump(&access, &Redis.servers()[0], Duration::from_millis(1))
            .await;
        assert_eq!(done, Err("redis: NOPERM no".into()));
    }
}
