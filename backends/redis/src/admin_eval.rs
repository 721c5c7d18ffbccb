//! A Lua script run on one server by the chaos controller's access, as Redis's administrator:
//! what the faults this crate offers use to see or change every key at once (the clock-jump
//! emulation's TTL script, the failover fault's count of locks and grants).
//!
//! Why as the administrator: on a secure cluster lockbench's user may not `EVAL`, nor `SCAN`
//! every key ([`crate::secure::ACL_RULES`]); on a plain cluster the login makes no
//! difference.

use lockbench_core::{Login, ServerAccess, ServerSpec};

/// Runs `script` with no keys and the arguments `args` on `spec`; the integers of its
/// (array or integer) reply.
pub(crate) async fn eval(
    access: &dyn ServerAccess,
    spec: &'static ServerSpec,
    script: &str,
    args: &[String],
) -> Result<Vec<i64>, String> {
    let mut parts: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), b"0"];
    parts.extend(args.iter().map(|a| a.as_bytes()));
    let mut request = format!("*{}\r\n", parts.len()).into_bytes();
    for p in parts {
        request.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
        request.extend_from_slice(p);
        request.extend_from_slice(b"\r\n");
    }
    let reply = access
        .ask(spec, request, integers_complete, Login::Admin)
        .await?;
    let text = String::from_utf8_lossy(&reply);
    if let Some(err) = text.strip_prefix('-') {
        return Err(format!("redis: {}", err.trim()));
    }
    Ok(text
        .lines()
        .filter_map(|l| l.strip_prefix(':'))
        .filter_map(|n| n.trim().parse().ok())
        .collect())
}

/// `true` once an integer, error, or flat array of integers has fully arrived.
fn integers_complete(reply: &[u8]) -> bool {
    let text = String::from_utf8_lossy(reply);
    let lines: Vec<&str> = text.split("\r\n").collect();
    if lines.len() < 2 {
        return false; // no complete line yet
    }
    match lines[0].strip_prefix('*') {
        Some(n) => {
            let n: usize = n.parse().unwrap_or(0);
            lines.len() > n + 1
        }
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_replies_complete() {
        assert!(!integers_complete(b"*2\r\n:1\r\n"));
        assert!(integers_complete(b"*2\r\n:1\r\n:0\r\n"));
        assert!(integers_complete(b":5\r\n"));
        assert!(integers_complete(b"-ERR x\r\n"));
        assert!(!integers_complete(b":5"));
    }
}
