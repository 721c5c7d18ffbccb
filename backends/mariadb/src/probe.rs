//! The health, role, version and promote probes as MySQL protocol bytes: one request written
//! at once, one reply read until whole (a [`lockbench_core::Exchange`]).
//!
//! Why it can be one request: the server speaks first (its greeting carries a scramble), but
//! user `lockbench` has no password, so the handshake response does not depend on the
//! scramble and can be sent before the greeting is read. The query (`COM_QUERY`) and
//! `COM_QUIT` follow in the same write; the server reads them in turn once the login is done.
//! Multi-statements are on, so a promotion is one query of three statements.
//!
//! The reply: the greeting, the login's `OK` (or `ERR`), then each statement's result: an
//! `OK`, an `ERR`, or a text result set (column count, column definitions, `EOF`, rows,
//! `EOF`); an `OK` or final `EOF` whose status has `SERVER_MORE_RESULTS_EXISTS` is followed
//! by the next statement's result.

/// `CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS | CLIENT_SECURE_CONNECTION
/// | CLIENT_MULTI_STATEMENTS | CLIENT_MULTI_RESULTS | CLIENT_PLUGIN_AUTH`.
pub(crate) const CAPABILITIES: u32 = 0x1 | 0x200 | 0x2000 | 0x8000 | 0x1_0000 | 0x2_0000 | 0x8_0000;
/// `SERVER_MORE_RESULTS_EXISTS` in a status word.
const MORE_RESULTS: u16 = 0x8;

/// Appends one packet: its length (3 bytes), its sequence number, `payload`.
pub(crate) fn packet(out: &mut Vec<u8>, seq: u8, payload: &[u8]) {
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_le_bytes()[..3]);
    out.push(seq);
    out.extend_from_slice(payload);
}

/// The payload length a packet's 4-byte header gives.
pub(crate) fn payload_len(header: &[u8]) -> usize {
    usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16
}

/// A login packet's fixed front: `capabilities`, the largest packet (16 MiB), the character
/// set (utf8mb4_general_ci) and 23 reserved bytes. Alone it is the `SSLRequest`.
pub(crate) fn login_head(capabilities: u32) -> Vec<u8> {
    let mut head = Vec::new();
    head.extend_from_slice(&capabilities.to_le_bytes());
    head.extend_from_slice(&(16u32 << 20).to_le_bytes());
    head.push(45);
    head.extend_from_slice(&[0; 23]);
    head
}

/// The login as `user` (no password), the query `sql`, and `COM_QUIT`.
pub(crate) fn request(user: &str, sql: &str) -> Vec<u8> {
    let mut login = login_head(CAPABILITIES);
    login.extend_from_slice(user.as_bytes());
    login.push(0);
    login.push(0); // an empty auth response
    login.extend_from_slice(b"mysql_native_password\0");
    let mut query = vec![0x03];
    query.extend_from_slice(sql.as_bytes());
    let mut out = Vec::new();
    packet(&mut out, 1, &login);
    packet(&mut out, 0, &query);
    packet(&mut out, 0, &[0x01]);
    out
}

/// The whole packets' payloads read so far, and whether bytes of an unfinished one follow.
fn payloads(reply: &[u8]) -> (Vec<&[u8]>, bool) {
    let mut out = Vec::new();
    let mut rest = reply;
    while rest.len() >= 4 {
        let len = payload_len(rest);
        if rest.len() < 4 + len {
            return (out, true);
        }
        out.push(&rest[4..4 + len]);
        rest = &rest[4 + len..];
    }
    (out, !rest.is_empty())
}

/// A length-encoded integer at the front of `b`, and the rest.
fn lenenc(b: &[u8]) -> Option<(u64, &[u8])> {
    let (&first, rest) = b.split_first()?;
    let take = |n: usize| -> Option<(u64, &[u8])> {
        let bytes = rest.get(..n)?;
        let mut v = 0u64;
        for (i, byte) in bytes.iter().enumerate() {
            v |= u64::from(*byte) << (8 * i);
        }
        Some((v, &rest[n..]))
    };
    match first {
        0..=0xfa => Some((u64::from(first), rest)),
        0xfc => take(2),
        0xfd => take(3),
        0xfe => take(8),
        _ => None,
    }
}

fn is_eof(p: &[u8]) -> bool {
    p.first() == Some(&0xfe) && p.len() < 9
}

/// The text of an `ERR` packet: `code (state): message`.
fn error(p: &[u8]) -> String {
    let code = p.get(1..3).map_or(0, |c| u16::from_le_bytes([c[0], c[1]]));
    let text = p.get(3..).unwrap_or_default();
    let (state, message) = match text.strip_prefix(b"#") {
        Some(t) if t.len() >= 5 => (String::from_utf8_lossy(&t[..5]), &t[5..]),
        _ => ("".into(), text),
    };
    format!("{code} ({state}): {}", String::from_utf8_lossy(message))
}

/// The status word of an `OK` packet.
fn ok_status(p: &[u8]) -> Option<u16> {
    let (_, rest) = lenenc(&p[1..])?;
    let (_, rest) = lenenc(rest)?;
    Some(u16::from_le_bytes([*rest.first()?, *rest.get(1)?]))
}

/// The status word of an `EOF` packet.
fn eof_status(p: &[u8]) -> u16 {
    match p.get(3..5) {
        Some(s) => u16::from_le_bytes([s[0], s[1]]),
        None => 0,
    }
}

/// One row of a text result set.
fn row(mut p: &[u8], columns: u64) -> Result<Vec<Option<String>>, String> {
    let mut out = Vec::new();
    for _ in 0..columns {
        if p.first() == Some(&0xfb) {
            out.push(None);
            p = &p[1..];
            continue;
        }
        let (len, rest) = lenenc(p).ok_or("a row's value is cut short")?;
        let value = rest
            .get(..len as usize)
            .ok_or("a row's value is cut short")?;
        out.push(Some(String::from_utf8_lossy(value).into_owned()));
        p = &rest[len as usize..];
    }
    Ok(out)
}

/// What the reply says so far: `None` while it is not whole, else every row of every
/// statement's result set, or the first error (the login's or a statement's).
fn parse(reply: &[u8]) -> Option<Result<Vec<Vec<Option<String>>>, String>> {
    let (packets, _) = payloads(reply);
    let mut it = packets.into_iter();
    let greeting = it.next()?;
    if greeting.first() == Some(&0xff) {
        return Some(Err(error(greeting)));
    }
    let login = it.next()?;
    match login.first() {
        Some(0x00) => {}
        Some(0xff) => return Some(Err(error(login))),
        Some(0xfe) => {
            return Some(Err(format!(
                "the server asked for another login method than mysql_native_password \
                 (user {})",
                crate::server::USER
            )));
        }
        _ => return Some(Err("an unexpected reply to the login".into())),
    }
    let mut rows = Vec::new();
    loop {
        let first = it.next()?;
        let more = match first.first() {
            Some(0x00) => ok_status(first).unwrap_or(0) & MORE_RESULTS != 0,
            Some(0xff) => return Some(Err(error(first))),
            _ => {
                let (columns, _) = lenenc(first)?;
                for _ in 0..columns {
                    it.next()?;
                }
                let eof = it.next()?;
                if !is_eof(eof) {
                    return Some(Err("a result set without its EOF".into()));
                }
                loop {
                    let p = it.next()?;
                    if p.first() == Some(&0xff) {
                        return Some(Err(error(p)));
                    }
                    if is_eof(p) {
                        break eof_status(p) & MORE_RESULTS != 0;
                    }
                    match row(p, columns) {
                        Ok(r) => rows.push(r),
                        Err(e) => return Some(Err(e)),
                    }
                }
            }
        };
        if !more {
            return Some(Ok(rows));
        }
    }
}

/// Whether the reply read so far is whole.
pub(crate) fn complete(reply: &[u8]) -> bool {
    parse(reply).is_some()
}

/// Every row the query returned, or what went wrong.
pub(crate) fn rows(reply: &[u8]) -> Result<Vec<Vec<Option<String>>>, String> {
    parse(reply).unwrap_or_else(|| Err("the reply was cut short".into()))
}

/// The first value of the first row.
pub(crate) fn first_value(reply: &[u8]) -> Option<String> {
    rows(reply).ok()?.into_iter().next()?.into_iter().next()?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pk(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        packet(&mut out, seq, payload);
        out
    }

    fn greeting_and_ok() -> Vec<u8> {
        let mut r = pk(0, b"\x0a10.11.19-MariaDB\0rest");
        r.extend(pk(2, &[0, 0, 0, 2, 0, 0, 0]));
        r
    }

    #[test]
    fn a_result_set_is_read_once_whole() {
        let mut r = greeting_and_ok();
        r.extend(pk(1, &[2]));
        r.extend(pk(2, b"def-col-1"));
        r.extend(pk(3, b"def-col-2"));
        r.extend(pk(4, &[0xfe, 0, 0, 2, 0]));
        assert!(!complete(&r));
        r.extend(pk(5, &[1, b'0', 0xfb]));
        r.extend(pk(6, &[0xfe, 0, 0, 2, 0]));
        assert!(complete(&r));
        assert_eq!(rows(&r).unwrap(), vec![vec![Some("0".to_string()), None]]);
        assert_eq!(first_value(&r).as_deref(), Some("0"));
        assert!(!complete(&r[..r.len() - 1]));
    }

    #[test]
    fn statements_with_more_results_are_all_read() {
        let mut r = greeting_and_ok();
        r.extend(pk(1, &[0, 0, 0, 0x0a, 0, 0, 0]));
        assert!(!complete(&r), "the first OK says more follow");
        r.extend(pk(2, &[0, 0, 0, 2, 0, 0, 0]));
        assert!(complete(&r));
        assert_eq!(rows(&r).unwrap(), Vec::<Vec<Option<String>>>::new());
    }

    #[test]
    fn errors_name_code_state_and_message() {
        let mut r = greeting_and_ok();
        r.extend(pk(1, b"\xff\x15\x04#42000Access denied"));
        assert!(complete(&r));
        assert_eq!(rows(&r).unwrap_err(), "1045 (42000): Access denied");
        let login = [pk(0, b"\x0agreeting"), pk(2, b"\xff\x15\x04#28000denied")].concat();
        assert!(rows(&login).unwrap_err().contains("denied"));
    }

    #[test]
    fn the_request_logs_in_then_queries_then_quits() {
        let r = request("lockbench", "SELECT 1");
        let (p, partial) = payloads(&r);
        assert!(!partial);
        assert_eq!(p.len(), 3);
        assert!(p[0].windows(10).any(|w| w == b"lockbench\0"));
        assert_eq!(p[1], b"\x03SELECT 1");
        assert_eq!(p[2], [1]);
        assert_eq!(r[3], 1, "the login is the greeting's reply: sequence 1");
    }
}
