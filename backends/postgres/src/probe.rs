//! The little of PostgreSQL's frontend/backend protocol (v3) the probes need, as data: one
//! request (a startup message, a simple `Query`, a `Terminate`, sent at once) and readers of
//! the reply.
//!
//! Why by hand: the cluster's probes are [`Exchange`](lockbench_core::Exchange)s, bytes the
//! cluster sends and reads under its own timeout, with no client library and no runtime in
//! the system's crate (a paused server must not hang `lockbench up`). With `trust`
//! authentication the server answers the startup message with `AuthenticationOk`, its
//! parameters and a first `ReadyForQuery`, then runs the query that is already waiting in
//! its buffer: the reply is whole at the second `ReadyForQuery`, or at an `ErrorResponse`
//! (an unknown database, a server still starting up). The readers are tested on replies
//! recorded from a real PostgreSQL 15.18 primary and replica.

/// The protocol version of the startup message: 3.0.
const PROTOCOL_3_0: i32 = 196_608;

/// A startup message for `user` on `database` (as `lockbench-probe`, so the server-side
/// views can tell probes from clients), a simple query of `sql`, and a `Terminate`.
pub(crate) fn request(user: &str, database: &str, sql: &str) -> Vec<u8> {
    let mut body = PROTOCOL_3_0.to_be_bytes().to_vec();
    for (k, v) in [
        ("user", user),
        ("database", database),
        ("application_name", "lockbench-probe"),
    ] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut out = len_prefixed(None, &body);
    let mut query = sql.as_bytes().to_vec();
    query.push(0);
    out.extend(len_prefixed(Some(b'Q'), &query));
    out.extend(len_prefixed(Some(b'X'), &[]));
    out
}

/// A message: its type byte (none for the startup message), its length (itself included),
/// its body.
fn len_prefixed(kind: Option<u8>, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 5);
    out.extend(kind);
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// The whole messages in `reply`, as (type, body); a partial last message is left out.
fn messages(reply: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut rest = reply;
    std::iter::from_fn(move || {
        let (&kind, after) = rest.split_first()?;
        let len = i32::from_be_bytes(after.get(..4)?.try_into().ok()?);
        let len = usize::try_from(len).ok().filter(|&l| l >= 4)?;
        let body = after.get(4..len)?;
        rest = &after[len..];
        Some((kind, body))
    })
}

/// `true` once the reply to [`request`] is whole: the second `ReadyForQuery` (the first
/// follows the startup), or an `ErrorResponse`.
pub(crate) fn complete(reply: &[u8]) -> bool {
    let mut ready = 0;
    for (kind, _) in messages(reply) {
        match kind {
            b'E' => return true,
            b'Z' => ready += 1,
            _ => {}
        }
    }
    ready >= 2
}

/// The query's rows (each value as text, `None` for NULL), or the server's error message,
/// or why the reply is not one.
pub(crate) fn rows(reply: &[u8]) -> Result<Vec<Vec<Option<String>>>, String> {
    let mut rows = Vec::new();
    let mut ready = 0;
    for (kind, body) in messages(reply) {
        match kind {
            b'E' => return Err(error_message(body)),
            b'D' => rows.push(data_row(body).ok_or("a malformed DataRow")?),
            b'Z' => ready += 1,
            _ => {}
        }
    }
    if ready < 2 {
        return Err("the reply ended before the query's ReadyForQuery".into());
    }
    Ok(rows)
}

/// The first value of the first row, when there is one and it is not NULL.
pub(crate) fn first_value(reply: &[u8]) -> Option<String> {
    rows(reply).ok()?.into_iter().next()?.into_iter().next()?
}

/// A `DataRow`'s values: an Int16 count, then each an Int32 length (-1: NULL) and its bytes.
fn data_row(body: &[u8]) -> Option<Vec<Option<String>>> {
    let n = i16::from_be_bytes(body.get(..2)?.try_into().ok()?);
    let mut rest = &body[2..];
    let mut values = Vec::new();
    for _ in 0..n {
        let len = i32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
        rest = &rest[4..];
        if len < 0 {
            values.push(None);
            continue;
        }
        let len = len as usize;
        values.push(Some(String::from_utf8_lossy(rest.get(..len)?).into_owned()));
        rest = &rest[len..];
    }
    Some(values)
}

/// An `ErrorResponse`'s severity, SQLSTATE and message (fields `V`, `C`, `M`).
fn error_message(body: &[u8]) -> String {
    let mut severity = "";
    let mut code = "";
    let mut message = "";
    for field in body.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        let text = std::str::from_utf8(&field[1..]).unwrap_or("");
        match field[0] {
            b'V' => severity = text,
            b'C' => code = text,
            b'M' => message = text,
            _ => {}
        }
    }
    format!("{severity} {code}: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a PostgreSQL 15.18 server sends after the startup message, up to its first
    /// `ReadyForQuery`: recorded, with five of its fourteen `ParameterStatus` messages kept
    /// (`in_hot_standby` differs between primary and replica).
    fn startup_reply(hot_standby: &str) -> Vec<u8> {
        let mut out = b"R\x00\x00\x00\x08\x00\x00\x00\x00".to_vec();
        for (k, v) in [
            ("application_name", "lockbench-probe"),
            ("client_encoding", "UTF8"),
            ("in_hot_standby", hot_standby),
            ("server_version", "15.18 (Debian 15.18-0+deb12u1)"),
            ("TimeZone", "UTC"),
        ] {
            let body = [k.as_bytes(), b"\0", v.as_bytes(), b"\0"].concat();
            out.extend(len_prefixed(Some(b'S'), &body));
        }
        out.extend_from_slice(b"K\x00\x00\x00\x0c\x00\x00|\xad\x16\xb3\xf5\xe6");
        out.extend_from_slice(b"Z\x00\x00\x00\x05I");
        out
    }

    /// `SELECT pg_is_in_recovery(), (SELECT status FROM pg_stat_wal_receiver)` on a primary,
    /// recorded from PostgreSQL 15.18.
    const PRIMARY: &[u8] = b"T\x00\x00\x00C\x00\x02pg_is_in_recovery\x00\x00\x00\x00\x00\x00\
        \x00\x00\x00\x00\x10\x00\x01\xff\xff\xff\xff\x00\x00status\x00\x00\x00\x00\x00\x00\x00\
        \x00\x00\x00\x19\xff\xff\xff\xff\xff\xff\x00\x00D\x00\x00\x00\x0f\x00\x02\x00\x00\x00\
        \x01f\xff\xff\xff\xffC\x00\x00\x00\rSELECT 1\x00Z\x00\x00\x00\x05I";

    /// The same on a streaming replica.
    const REPLICA: &[u8] = b"T\x00\x00\x00C\x00\x02pg_is_in_recovery\x00\x00\x00\x00\x00\x00\
        \x00\x00\x00\x00\x10\x00\x01\xff\xff\xff\xff\x00\x00status\x00\x00\x00\x00\x00\x00\x00\
        \x00\x00\x00\x19\xff\xff\xff\xff\xff\xff\x00\x00D\x00\x00\x00\x18\x00\x02\x00\x00\x00\
        \x01t\x00\x00\x00\tstreamingC\x00\x00\x00\rSELECT 1\x00Z\x00\x00\x00\x05I";

    /// `SHOW server_version`, recorded.
    const VERSION: &[u8] = b"T\x00\x00\x00'\x00\x01server_version\x00\x00\x00\x00\x00\x00\x00\
        \x00\x00\x00\x19\xff\xff\xff\xff\xff\xff\x00\x00D\x00\x00\x00(\x00\x01\x00\x00\x00\x1e\
        15.18 (Debian 15.18-0+deb12u1)C\x00\x00\x00\tSHOW\x00Z\x00\x00\x00\x05I";

    /// A startup refused for an unknown database, recorded (the whole reply).
    const NO_DATABASE: &[u8] = b"R\x00\x00\x00\x08\x00\x00\x00\x00E\x00\x00\x00]SFATAL\x00\
        VFATAL\x00C3D000\x00Mdatabase \"nosuchdb\" does not exist\x00Fpostinit.c\x00L948\x00\
        RInitPostgres\x00\x00";

    #[test]
    fn the_request_is_a_startup_a_query_and_a_terminate() {
        let r = request("postgres", "lockbench", "SELECT 1");
        let len = i32::from_be_bytes(r[..4].try_into().unwrap()) as usize;
        assert_eq!(&r[4..8], &PROTOCOL_3_0.to_be_bytes());
        assert!(r[8..len].starts_with(b"user\0postgres\0database\0lockbench\0"));
        assert_eq!(r[len - 1], 0, "the parameter list ends with an empty name");
        let tail: Vec<(u8, &[u8])> = messages(&r[len..]).collect();
        assert_eq!(tail, vec![(b'Q', &b"SELECT 1\0"[..]), (b'X', &b""[..])]);
    }

    #[test]
    fn a_reply_is_whole_at_the_second_ready_for_query() {
        let whole = [startup_reply("off"), PRIMARY.to_vec()].concat();
        assert!(complete(&whole));
        for cut in 0..whole.len() {
            assert!(!complete(&whole[..cut]), "complete after {cut} bytes");
        }
        assert_eq!(
            rows(&whole).unwrap(),
            vec![vec![Some("f".to_string()), None]]
        );
        assert!(rows(&whole[..whole.len() - 1]).is_err());
    }

    #[test]
    fn a_replica_names_its_wal_receiver() {
        let whole = [startup_reply("on"), REPLICA.to_vec()].concat();
        assert!(complete(&whole));
        assert_eq!(
            rows(&whole).unwrap(),
            vec![vec![Some("t".into()), Some("streaming".into())]]
        );
    }

    #[test]
    fn an_error_completes_the_reply_and_says_why() {
        assert!(complete(NO_DATABASE));
        assert!(!complete(&NO_DATABASE[..NO_DATABASE.len() - 1]));
        let err = rows(NO_DATABASE).unwrap_err();
        assert_eq!(err, "FATAL 3D000: database \"nosuchdb\" does not exist");
    }

    #[test]
    fn reads_the_version() {
        let whole = [startup_reply("off"), VERSION.to_vec()].concat();
        assert_eq!(
            first_value(&whole).as_deref(),
            Some("15.18 (Debian 15.18-0+deb12u1)")
        );
    }
}
