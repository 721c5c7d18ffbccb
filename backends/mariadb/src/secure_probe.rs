//! The cluster's probes of a secure pair: the same query as on a plain one
//! ([`crate::probe::request`]), sent after MySQL's way into TLS and a password, which no fixed
//! login message can do ([`System::secure_ask`](lockbench_core::System::secure_ask)).
//!
//! The way in: the server's greeting (its scramble), an `SSLRequest` (a short login packet
//! with `CLIENT_SSL`), the TLS handshake (the client certificate, the address's host
//! verified), then the login as the administrator with `mysql_native_password`'s answer to
//! the scramble, then the request's query and `COM_QUIT`. The reply handed back is the
//! greeting followed by what came over TLS, so the probes' readers see what they see on a
//! plain server.

use rustls::pki_types::ServerName;
use secrecy::{ExposeSecret, SecretString};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// `CLIENT_SSL`.
const SSL: u32 = 0x800;

/// One packet's header and payload from `r`.
async fn packet(r: &mut (impl AsyncRead + Unpin)) -> Result<Vec<u8>, String> {
    let mut head = [0u8; 4];
    r.read_exact(&mut head)
        .await
        .map_err(|e| format!("reading the greeting: {e}"))?;
    let mut out = head.to_vec();
    out.resize(4 + crate::probe::payload_len(&head), 0);
    r.read_exact(&mut out[4..])
        .await
        .map_err(|e| format!("reading the greeting: {e}"))?;
    Ok(out)
}

/// The 20-byte scramble of a greeting packet (header included).
fn scramble(greeting: &[u8]) -> Result<Vec<u8>, String> {
    let p = greeting.get(4..).ok_or("an empty greeting")?;
    if p.first() == Some(&0xff) {
        return Err(crate::probe::rows(greeting).unwrap_err());
    }
    let version_end = p
        .iter()
        .skip(1)
        .position(|b| *b == 0)
        .ok_or("a greeting without its version")?
        + 2;
    // connection id (4), scramble part 1 (8), filler, capabilities (2), charset, status (2),
    // capabilities (2), scramble length, reserved (10), scramble part 2 (12 and a NUL).
    let part1 = p.get(version_end + 4..version_end + 12);
    let part2 = p.get(version_end + 31..version_end + 43);
    match (part1, part2) {
        (Some(a), Some(b)) => Ok([a, b].concat()),
        _ => Err("a greeting too short for a scramble".into()),
    }
}

/// The packets of `request` after its login: the query and `COM_QUIT`.
fn after_login(request: &[u8]) -> &[u8] {
    &request[4 + crate::probe::payload_len(request)..]
}

/// `ex` over TLS as the administrator (see the module docs).
pub(crate) async fn ask(
    ex: &lockbench_core::Exchange,
    tls: Arc<rustls::ClientConfig>,
    password: &SecretString,
) -> Result<Vec<u8>, String> {
    let addr = ex.addr.as_str();
    let mut tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let greeting = packet(&mut tcp).await?;
    let scramble = scramble(&greeting)?;
    let head = crate::probe::login_head(crate::probe::CAPABILITIES | SSL);
    let mut ssl_request = Vec::new();
    crate::probe::packet(&mut ssl_request, 1, &head);
    tcp.write_all(&ssl_request)
        .await
        .map_err(|e| format!("SSLRequest: {e}"))?;
    let name = ServerName::try_from(lockbench_core::crypto::member_host(addr).to_string())
        .map_err(|e| e.to_string())?;
    let mut stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake: {e}"))?;
    let mut body = head;
    body.extend_from_slice(crate::secure::ADMIN_USER.as_bytes());
    body.push(0);
    let answer = crate::secure::native_answer(password.expose_secret(), &scramble);
    body.push(answer.len() as u8);
    body.extend_from_slice(&answer);
    body.extend_from_slice(b"mysql_native_password\0");
    let mut out = Vec::new();
    crate::probe::packet(&mut out, 2, &body);
    out.extend_from_slice(after_login(&ex.request));
    stream
        .write_all(&out)
        .await
        .map_err(|e| format!("sending the login and the query: {e}"))?;
    let mut reply = greeting;
    let mut buf = [0u8; 4096];
    while !crate::probe::complete(&reply) {
        let n = stream
            .read(&mut buf)
            .await
            .map_err(|e| format!("reading the reply: {e}"))?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
    }
    Ok(reply)
}
