//! The adapter protocol's lines (`docs/adapter-protocol.md`), and reading them strictly.
//!
//! Why strict: an adapter is someone else's code between lockbench and the library it judges.
//! A line lockbench half-understood would turn into a wrong op in the history, and a wrong op
//! into a wrong verdict, so every line is checked whole: what it must hold, which values are
//! allowed, that an answer answers the request just sent. A line that fails is a
//! [`Violation`] naming the line and what was expected; the backend then stops trusting the
//! adapter (its verdict is `unknown`).

use lockbench_core::{ErrorKind, FencingToken};
use serde::{Deserialize, Serialize};

/// The protocol version this lockbench speaks.
pub const VERSION: u32 = 1;

/// The adapter's first line.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// The protocol version the adapter speaks.
    pub hello: u32,
    /// The library it runs (`redis-py`).
    pub library: String,
    /// The library's version, as the library reports it.
    pub version: String,
    /// What the fencing token is, or `None` when the library gives none.
    pub fencing: Option<String>,
    /// Whether the library has a shared (read) lock: `acquire_shared` is then asked;
    /// otherwise every acquire is exclusive.
    #[serde(default)]
    pub shared: bool,
}

/// What lockbench asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Wait for the exclusive lock.
    Acquire,
    /// Wait for the shared (read) lock.
    AcquireShared,
    /// Give back a held lock.
    Release,
    /// Extend or check a held lock.
    Renew,
    /// End the session cleanly and exit.
    Close,
}

/// One request line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Request {
    /// Its number, unique in the adapter's life; the answer repeats it.
    pub id: u64,
    /// What to do.
    pub op: Op,
    /// Which lock (absent for `close`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<u32>,
}

impl Request {
    /// The request line, with its newline.
    pub fn line(&self) -> String {
        let mut s = serde_json::to_string(self).expect("a request serializes");
        s.push('\n');
        s
    }
}

/// An answer line as read, before it is checked against its request.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnswer {
    id: u64,
    #[serde(default)]
    ok: Option<bool>,
    #[serde(default)]
    token: Option<u64>,
    #[serde(default)]
    fail: Option<String>,
    #[serde(default)]
    info: Option<String>,
    #[serde(default)]
    detail: Option<String>,
}

/// What an answer says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Done; with the fencing token of a granted acquire when the library has one.
    Ok(Option<FencingToken>),
    /// Definitely not done.
    Fail(ErrorKind),
    /// Done or not: unknown.
    Info(ErrorKind),
}

/// A line that breaks the protocol: which line, and what was expected instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line:?}: {expected}")]
pub struct Violation {
    /// The offending line (cut to 200 characters), or what stood for it (`<end of output>`).
    pub line: String,
    /// What the protocol expected there.
    pub expected: String,
}

impl Violation {
    /// A violation by `line`.
    pub fn new(line: &str, expected: impl Into<String>) -> Violation {
        let line: String = line.trim_end().chars().take(200).collect();
        Violation {
            line,
            expected: expected.into(),
        }
    }
}

/// Reads the adapter's first line.
pub fn hello(line: &str) -> Result<Hello, Violation> {
    let h: Hello = serde_json::from_str(line).map_err(|e| {
        Violation::new(
            line,
            format!(
                "a hello line, e.g. {{\"hello\": {VERSION}, \"library\": \"redis-py\", \
                 \"version\": \"5.0.1\", \"fencing\": null}} ({e})"
            ),
        )
    })?;
    if h.hello != VERSION {
        return Err(Violation::new(
            line,
            format!("protocol version {VERSION} (this lockbench speaks only {VERSION})"),
        ));
    }
    if h.library.trim().is_empty() || h.version.trim().is_empty() {
        return Err(Violation::new(line, "a non-empty `library` and `version`"));
    }
    Ok(h)
}

/// The error kinds an answer may name.
fn error_kind(name: &str) -> Option<ErrorKind> {
    Some(match name {
        "timeout" => ErrorKind::Timeout,
        "connection-lost" => ErrorKind::ConnectionLost,
        "session-expired" => ErrorKind::SessionExpired,
        "lock-lost" => ErrorKind::LockLost,
        "no-quorum" => ErrorKind::NoQuorum,
        "unavailable" => ErrorKind::Unavailable,
        "other" => ErrorKind::Other,
        _ => return None,
    })
}

const KINDS: &str =
    "timeout, connection-lost, session-expired, lock-lost, no-quorum, unavailable, other";

/// Reads the answer to `request` (with its optional `detail`).
pub fn answer(line: &str, request: &Request) -> Result<(Answer, Option<String>), Violation> {
    let raw: RawAnswer = serde_json::from_str(line).map_err(|e| {
        Violation::new(
            line,
            format!(
                "the answer to request {} ({{\"id\": {}, \"ok\": true}}, \"fail\": KIND or \
                 \"info\": KIND) ({e})",
                request.id, request.id
            ),
        )
    })?;
    if raw.id != request.id {
        return Err(Violation::new(
            line,
            format!(
                "the answer to request {} (the only one asked), not to {}",
                request.id, raw.id
            ),
        ));
    }
    let kind = |name: &str| {
        error_kind(name).ok_or_else(|| Violation::new(line, format!("an error kind: {KINDS}")))
    };
    let answer = match (raw.ok, raw.fail.as_deref(), raw.info.as_deref()) {
        (Some(true), None, None) => {
            if raw.token.is_some() && request.op != Op::Acquire && request.op != Op::AcquireShared {
                return Err(Violation::new(line, "a token only with a granted acquire"));
            }
            Answer::Ok(raw.token.map(FencingToken))
        }
        (None, Some(f), None) => Answer::Fail(kind(f)?),
        (None, None, Some(i)) => Answer::Info(kind(i)?),
        _ => {
            return Err(Violation::new(
                line,
                "exactly one of `\"ok\": true`, `\"fail\": KIND`, `\"info\": KIND`",
            ));
        }
    };
    if raw.token.is_some() && !matches!(answer, Answer::Ok(_)) {
        return Err(Violation::new(line, "a token only with a granted acquire"));
    }
    Ok((answer, raw.detail))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: u64, op: Op) -> Request {
        Request {
            id,
            op,
            key: Some(3),
        }
    }

    #[test]
    fn a_request_is_one_json_line() {
        assert_eq!(
            req(7, Op::AcquireShared).line(),
            "{\"id\":7,\"op\":\"acquire_shared\",\"key\":3}\n"
        );
        let close = Request {
            id: 8,
            op: Op::Close,
            key: None,
        };
        assert_eq!(close.line(), "{\"id\":8,\"op\":\"close\"}\n");
    }

    #[test]
    fn a_hello_is_read_strictly() {
        let ok =
            hello(r#"{"hello": 1, "library": "redis-py", "version": "5.0.1", "fencing": null}"#)
                .unwrap();
        assert_eq!(ok.library, "redis-py");
        assert_eq!(ok.fencing, None);
        for (bad, says) in [
            ("garbage", "a hello line"),
            (
                r#"{"hello": 2, "library": "x", "version": "1", "fencing": null}"#,
                "version 1",
            ),
            (
                r#"{"hello": 1, "library": "", "version": "1", "fencing": null}"#,
                "non-empty",
            ),
            (
                r#"{"hello": 1, "library": "x", "version": "1", "fencing": null, "x": 1}"#,
                "unknown field",
            ),
        ] {
            let v = hello(bad).unwrap_err();
            assert!(v.to_string().contains(says), "{bad}: {v}");
        }
    }

    #[test]
    fn an_answer_must_answer_the_request_asked() {
        let acquire = req(7, Op::Acquire);
        assert_eq!(
            answer(r#"{"id": 7, "ok": true, "token": 12}"#, &acquire)
                .unwrap()
                .0,
            Answer::Ok(Some(FencingToken(12)))
        );
        assert_eq!(
            answer(
                r#"{"id": 7, "fail": "timeout", "detail": "lock_timeout"}"#,
                &acquire
            )
            .unwrap(),
            (
                Answer::Fail(ErrorKind::Timeout),
                Some("lock_timeout".into())
            )
        );
        assert_eq!(
            answer(r#"{"id": 7, "info": "connection-lost"}"#, &acquire)
                .unwrap()
                .0,
            Answer::Info(ErrorKind::ConnectionLost)
        );
        for (bad, says) in [
            (r#"{"id": 6, "ok": true}"#, "not to 6"),
            (r#"{"id": 7, "ok": true, "fail": "timeout"}"#, "exactly one"),
            (r#"{"id": 7, "fail": "nope"}"#, "an error kind"),
            (r#"{"id": 7}"#, "exactly one"),
            ("OK", "the answer to request 7"),
            (
                r#"{"id": 7, "fail": "timeout", "token": 3}"#,
                "a token only",
            ),
        ] {
            let v = answer(bad, &acquire).unwrap_err();
            assert!(v.to_string().contains(says), "{bad}: {v}");
        }
        let v = answer(r#"{"id": 7, "ok": true, "token": 3}"#, &req(7, Op::Release)).unwrap_err();
        assert!(v.to_string().contains("a token only"), "{v}");
    }
}
