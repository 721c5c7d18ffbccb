//! The adapter side of the protocol, for a library written in Rust: serves one client of any
//! [`Backend`] on stdin/stdout. `lockbench serve-adapter RECIPE` uses it to put lockbench's
//! own recipes behind the protocol, which measures what the protocol itself costs (the
//! `lib:rust-setnx` adapter against the in-process `redis-setnx`).

use crate::protocol::{Hello, VERSION};
use lockbench_core::{Backend, ClientId, Grant, KeyId, LockClient, Outcome};
use serde_json::{Value, json};
use std::collections::HashMap;
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// Serves one client of `backend` as client `client`: the hello, then one answer per request
/// until `close` (or the end of input).
pub async fn serve<B: Backend, R, W>(
    backend: B,
    client: ClientId,
    library: &str,
    input: R,
    mut output: W,
) -> anyhow::Result<()>
where
    R: tokio::io::AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut c = backend.connect(client).await?;
    let info = backend.info();
    let hello = Hello {
        hello: VERSION,
        library: library.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        fencing: Some(info.fencing).filter(|f| !f.starts_with("none")),
        shared: c.shared_mode(),
    };
    write(&mut output, &serde_json::to_value(&hello)?).await?;
    let mut held: HashMap<u32, Grant<<B::Client as LockClient>::Handle>> = HashMap::new();
    let mut lines = BufReader::new(input).lines();
    while let Some(line) = lines.next_line().await? {
        let req: Value = serde_json::from_str(&line)?;
        let id = req["id"].as_u64().unwrap_or(0);
        let key = req["key"].as_u64().map(|k| k as u32);
        let answer = match (req["op"].as_str(), key) {
            (Some("acquire"), Some(k)) => granted(c.acquire(KeyId(k)).await, &mut held),
            (Some("acquire_shared"), Some(k)) => {
                granted(c.acquire_shared(KeyId(k)).await, &mut held)
            }
            (Some("release"), Some(k)) => match held.remove(&k) {
                Some(g) => done(c.release(g).await),
                None => json!({"fail": "lock-lost", "detail": "not held by this client"}),
            },
            (Some("renew"), Some(k)) => match held.get(&k) {
                Some(g) => done(c.renew(g).await),
                None => json!({"fail": "lock-lost", "detail": "not held by this client"}),
            },
            (Some("close"), _) => {
                write(&mut output, &json!({"id": id, "ok": true})).await?;
                c.close().await;
                return Ok(());
            }
            _ => json!({"fail": "other", "detail": format!("not a request: {line}")}),
        };
        let mut answer = answer;
        answer["id"] = json!(id);
        write(&mut output, &answer).await?;
    }
    c.close().await;
    Ok(())
}

async fn write<W: AsyncWrite + Unpin>(out: &mut W, v: &Value) -> std::io::Result<()> {
    let mut line = v.to_string();
    line.push('\n');
    out.write_all(line.as_bytes()).await?;
    out.flush().await
}

fn granted<H>(o: Outcome<Grant<H>>, held: &mut HashMap<u32, Grant<H>>) -> Value {
    match o {
        Outcome::Ok(g) => {
            let token = g.token.map(|t| t.0);
            held.insert(g.key.0, g);
            match token {
                Some(t) => json!({"ok": true, "token": t}),
                None => json!({"ok": true}),
            }
        }
        Outcome::Fail(e) => json!({"fail": e.name()}),
        Outcome::Info(e) => json!({"info": e.name()}),
    }
}

fn done(o: Outcome<()>) -> Value {
    match o {
        Outcome::Ok(()) => json!({"ok": true}),
        Outcome::Fail(e) => json!({"fail": e.name()}),
        Outcome::Info(e) => json!({"info": e.name()}),
    }
}
