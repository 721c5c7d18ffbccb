//! The cluster's probes of a secure pair: the same request as on a plain one
//! ([`crate::probe::request`]), sent after PostgreSQL's way into TLS and SCRAM, which no fixed
//! login message can do ([`System::secure_ask`](lockbench_core::System::secure_ask)).
//!
//! The way in: an `SSLRequest` answered `S`, the TLS handshake (the client certificate, the
//! address's host verified), the request's startup message (as `postgres`, the
//! administrator: the probes read `pg_stat_wal_receiver` and call `pg_promote`), then SCRAM's
//! two rounds with the administrator's password, after which the request's query and
//! `Terminate` follow. The reply handed back starts at `AuthenticationOk`, so the probes'
//! readers see what they see on a plain server (two `ReadyForQuery`, or an `ErrorResponse`).

use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use rustls::pki_types::ServerName;
use secrecy::{ExposeSecret, SecretString};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// `SSLRequest`: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 4, 210, 22, 47];

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
    tcp.write_all(&SSL_REQUEST)
        .await
        .map_err(|e| e.to_string())?;
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer)
        .await
        .map_err(|e| format!("SSLRequest: {e}"))?;
    if answer[0] != b'S' {
        return Err("the server does not speak TLS (it refused the SSLRequest)".into());
    }
    let name = ServerName::try_from(lockbench_core::crypto::member_host(addr).to_string())
        .map_err(|e| e.to_string())?;
    let mut stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake: {e}"))?;
    let len = i32::from_be_bytes(ex.request[..4].try_into().map_err(|_| "empty request")?);
    let (startup, rest) = ex.request.split_at(len as usize);
    send(&mut stream, startup).await?;
    let mut scram = None;
    let mut buf = Vec::new();
    loop {
        let (kind, body, whole) = next_message(&mut stream, &mut buf).await?;
        match (kind, auth_code(&body)) {
            (b'R', Some(10)) => {
                let s = ScramSha256::new(
                    password.expose_secret().as_bytes(),
                    ChannelBinding::unsupported(),
                );
                let mut msg = format!("{SCRAM_SHA_256}\0").into_bytes();
                msg.extend_from_slice(&(s.message().len() as i32).to_be_bytes());
                msg.extend_from_slice(s.message());
                send(&mut stream, &message(b'p', &msg)).await?;
                scram = Some(s);
            }
            (b'R', Some(11)) => {
                let s = scram.as_mut().ok_or("SASLContinue before SASL")?;
                s.update(&body[4..]).map_err(|e| format!("SCRAM: {e}"))?;
                send(&mut stream, &message(b'p', s.message())).await?;
            }
            (b'R', Some(12)) => {
                let s = scram.as_mut().ok_or("SASLFinal before SASL")?;
                s.finish(&body[4..]).map_err(|e| format!("SCRAM: {e}"))?;
            }
            (b'R', Some(0)) | (b'E', _) => {
                let mut reply = whole;
                reply.append(&mut buf);
                if kind == b'R' {
                    send(&mut stream, rest).await?;
                }
                return read_rest(&mut stream, reply, ex.complete).await;
            }
            (b'R', code) => {
                return Err(format!(
                    "an authentication request {code:?} it cannot answer"
                ));
            }
            _ => {}
        }
    }
}

/// The authentication request's code (the first Int32 of an `R` message).
fn auth_code(body: &[u8]) -> Option<i32> {
    Some(i32::from_be_bytes(body.get(..4)?.try_into().ok()?))
}

/// A message of type `kind` with `body`.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

async fn send<S: AsyncWrite + Unpin>(s: &mut S, bytes: &[u8]) -> Result<(), String> {
    s.write_all(bytes).await.map_err(|e| e.to_string())
}

/// The next whole message from `s` (bytes read past it stay in `buf`): its type, its body,
/// and the message as it came.
async fn next_message<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
) -> Result<(u8, Vec<u8>, Vec<u8>), String> {
    loop {
        if buf.len() >= 5 {
            let len = i32::from_be_bytes(buf[1..5].try_into().expect("4 bytes"));
            let len = usize::try_from(len).map_err(|_| "a malformed message")? + 1;
            if buf.len() >= len {
                let whole: Vec<u8> = buf.drain(..len).collect();
                return Ok((whole[0], whole[5..].to_vec(), whole));
            }
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the server closed the connection during the login".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads until the server closes the connection or `complete(reply)`.
async fn read_rest<S: AsyncRead + Unpin>(
    s: &mut S,
    mut reply: Vec<u8>,
    complete: fn(&[u8]) -> bool,
) -> Result<Vec<u8>, String> {
    let mut chunk = [0u8; 4096];
    while !complete(&reply) {
        let n = s.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&chunk[..n]);
    }
    Ok(reply)
}
