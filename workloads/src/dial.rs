//! Workers that dial in: `lockbench worker --coordinator ADDR` connects to the run's
//! coordinator over TCP, proves it knows the run's secret, and is handed its job.
//!
//! Why: a worker on another host (a Swarm task, a Kubernetes pod, a machine in another rack)
//! cannot be a child process with pipes. It starts on its own, wherever its launcher put it,
//! and comes to the coordinator.
//!
//! The secret: [`RunSecret`], 32 random bytes per run, handed to whatever launches the
//! workers in the environment variable [`SECRET_ENV`] (never on a command line, where `ps`
//! shows it, and never in a log or a result). It never crosses the wire either: the worker
//! proves it knows it by an HMAC-SHA256 over a fresh nonce of the coordinator's and its own
//! name (challenge and response), so a listener on the network learns nothing it can replay.
//! A connection that fails the handshake, or says anything before it, is refused and closed
//! before it is given a job or read any further, so it cannot put an op into the history; the
//! coordinator logs it by its address ([`Listener::refused`] keeps the same lines).
//!
//! ```text
//! worker -> coordinator: {"hello":{"worker":"client1"}}
//! coordinator -> worker: {"challenge":{"nonce":".."}}        32 random bytes, hex
//! worker -> coordinator: {"proof":{"mac":".."}}               HMAC-SHA256(secret, nonce ‖ name)
//! coordinator -> worker: "welcome" | {"refused":{"reason":".."}}
//! then crate::worker's protocol: the job line, commands, probes; ops, stats.
//! ```
//!
//! What it does not do: encrypt. Ops and jobs (which hold the servers' addresses, never
//! credentials) cross the network in the clear; run workers on a network you trust, as you
//! would the lock servers' own client traffic.

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWrite, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The environment variable that carries the run's secret to a worker (hex).
pub const SECRET_ENV: &str = "LOCKBENCH_WORKER_SECRET";
/// Or the path of a file that holds it (a Docker or Kubernetes secret mounted as a file, which
/// `docker service inspect` does not show as it shows an environment variable).
pub const SECRET_FILE_ENV: &str = "LOCKBENCH_WORKER_SECRET_FILE";
/// How long a connection gets to complete the handshake.
pub const HANDSHAKE_BUDGET: Duration = Duration::from_secs(5);
/// The longest line the handshake reads (a hello with a long name is still far shorter).
const MAX_HANDSHAKE_LINE: u64 = 4096;

/// A run's shared secret. Its `Debug` never shows it.
#[derive(Clone)]
pub struct RunSecret(Vec<u8>);

impl std::fmt::Debug for RunSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunSecret(..)")
    }
}

impl RunSecret {
    /// 32 fresh random bytes (the thread-local CSPRNG).
    pub fn generate() -> RunSecret {
        RunSecret(rand::random::<[u8; 32]>().to_vec())
    }

    /// The secret as [`SECRET_ENV`]'s value, for a launcher's environment (never print it).
    pub fn to_env_value(&self) -> String {
        crate::hex::encode(&self.0)
    }

    /// A secret from [`SECRET_ENV`]'s value: hex, at least 16 bytes.
    pub fn from_env_value(value: &str) -> Result<RunSecret, String> {
        let bytes = crate::hex::decode(value.trim())
            .map_err(|e| format!("{SECRET_ENV} is not a hex secret: {e}"))?;
        if bytes.len() < 16 {
            return Err(format!(
                "{SECRET_ENV} is too short ({} bytes; at least 16, e.g. `openssl rand -hex 32`)",
                bytes.len()
            ));
        }
        Ok(RunSecret(bytes))
    }

    /// The secret in this process's [`SECRET_ENV`], else in the file [`SECRET_FILE_ENV`]
    /// names.
    pub fn from_env() -> Result<RunSecret, String> {
        if let Ok(v) = std::env::var(SECRET_ENV) {
            return RunSecret::from_env_value(&v);
        }
        match std::env::var(SECRET_FILE_ENV) {
            Ok(path) => {
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    format!("{SECRET_FILE_ENV}={path}: cannot read the run's secret: {e}")
                })?;
                RunSecret::from_env_value(&text)
                    .map_err(|e| format!("{SECRET_FILE_ENV}={path}: {e}"))
            }
            Err(_) => Err(format!(
                "neither {SECRET_ENV} nor {SECRET_FILE_ENV} is set: a worker needs the run's \
                 secret in its environment (the launcher sets it; by hand: `export \
                 {SECRET_ENV}=...` with the value the coordinator was given)"
            )),
        }
    }

    fn mac(&self, nonce: &[u8], worker: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(nonce);
        mac.update(worker.as_bytes());
        mac
    }
}

/// A handshake message (before the job).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Handshake {
    Hello { worker: String },
    Challenge { nonce: String },
    Proof { mac: String },
    Welcome,
    Refused { reason: String },
}

async fn send(out: &mut (impl AsyncWrite + Unpin), msg: &Handshake) -> io::Result<()> {
    crate::worker::send_line(out, msg).await
}

/// Reads one handshake line (bounded, so a peer cannot make the coordinator buffer forever).
async fn receive(input: &mut BufReader<OwnedReadHalf>) -> Result<Handshake, String> {
    use tokio::io::AsyncReadExt;
    let mut line = String::new();
    let n = (&mut *input)
        .take(MAX_HANDSHAKE_LINE)
        .read_line(&mut line)
        .await
        .map_err(|e| format!("read failed: {e}"))?;
    if n == 0 {
        return Err("closed the connection during the handshake".into());
    }
    serde_json::from_str(&line).map_err(|_| {
        let shown: String = line.trim().chars().take(60).collect();
        format!("sent {shown:?} where the handshake expected a message")
    })
}

/// A worker that completed the handshake: its name, address and connection, ready for
/// [`RemoteWorker::start`](crate::remote::RemoteWorker::start).
#[derive(Debug)]
pub struct Arrival {
    /// The name it gave (`client1`, ...).
    pub name: String,
    /// Where it connected from.
    pub peer: SocketAddr,
    pub(crate) input: BufReader<OwnedReadHalf>,
    pub(crate) output: OwnedWriteHalf,
}

/// The coordinator's listener for workers that dial in. Dropping it stops accepting.
#[derive(Debug)]
pub struct Listener {
    addr: SocketAddr,
    arrivals: mpsc::UnboundedReceiver<Arrival>,
    refused: Arc<Mutex<Vec<String>>>,
    accept: JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Listener {
    /// Listens on `addr` (port 0: any free port) for workers that know `secret`.
    pub async fn bind(addr: SocketAddr, secret: RunSecret) -> io::Result<Listener> {
        let tcp = TcpListener::bind(addr).await.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot listen for workers on {addr}: {e}"),
            )
        })?;
        let addr = tcp.local_addr()?;
        let (tx, arrivals) = mpsc::unbounded_channel();
        let refused = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let refused = refused.clone();
            tokio::spawn(async move {
                while let Ok((stream, peer)) = tcp.accept().await {
                    let (tx, secret, refused) = (tx.clone(), secret.clone(), refused.clone());
                    tokio::spawn(async move {
                        let result =
                            tokio::time::timeout(HANDSHAKE_BUDGET, admit(stream, peer, &secret))
                                .await
                                .unwrap_or_else(|_| {
                                    Err(format!(
                                        "did not complete the handshake within {HANDSHAKE_BUDGET:?}"
                                    ))
                                });
                        match result {
                            Ok(arrival) => {
                                tracing::info!(worker = %arrival.name, %peer, "worker dialled in");
                                let _ = tx.send(arrival);
                            }
                            Err(reason) => {
                                let line = format!("refused a worker from {peer}: {reason}");
                                tracing::warn!("{line}");
                                refused.lock().unwrap_or_else(|e| e.into_inner()).push(line);
                            }
                        }
                    });
                }
            })
        };
        Ok(Listener {
            addr,
            arrivals,
            refused,
            accept,
        })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The next worker that completed the handshake, waiting up to `budget`.
    pub async fn next(&mut self, budget: Duration) -> Result<Arrival, String> {
        match tokio::time::timeout(budget, self.arrivals.recv()).await {
            Ok(Some(a)) => Ok(a),
            Ok(None) => Err("the worker listener stopped".into()),
            Err(_) => Err(format!(
                "no worker dialled in to {} within {budget:?}{}",
                self.addr,
                match self.refused().len() {
                    0 => String::new(),
                    n => format!(" ({n} refused: {})", self.refused().join("; ")),
                }
            )),
        }
    }

    /// The connections refused so far, as logged (`refused a worker from ADDR: why`).
    pub fn refused(&self) -> Vec<String> {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The coordinator's side of the handshake with the connection from `peer`.
async fn admit(stream: TcpStream, peer: SocketAddr, secret: &RunSecret) -> Result<Arrival, String> {
    let _ = stream.set_nodelay(true);
    let (read, mut output) = stream.into_split();
    let mut input = BufReader::new(read);
    let name = match receive(&mut input).await? {
        Handshake::Hello { worker } => worker,
        other => return Err(format!("began with {other:?} instead of a hello")),
    };
    let nonce: [u8; 32] = rand::random();
    send(
        &mut output,
        &Handshake::Challenge {
            nonce: crate::hex::encode(&nonce),
        },
    )
    .await
    .map_err(|e| format!("{name}: write failed: {e}"))?;
    let proof = match receive(&mut input).await? {
        Handshake::Proof { mac } => mac,
        other => return Err(format!("{name}: answered {other:?} instead of a proof")),
    };
    let proof = crate::hex::decode(&proof).unwrap_or_default();
    if secret.mac(&nonce, &name).verify_slice(&proof).is_err() {
        let _ = send(
            &mut output,
            &Handshake::Refused {
                reason: "wrong secret".into(),
            },
        )
        .await;
        return Err(format!(
            "{name:?} does not know the run's secret (wrong or missing {SECRET_ENV})"
        ));
    }
    send(&mut output, &Handshake::Welcome)
        .await
        .map_err(|e| format!("{name}: write failed: {e}"))?;
    Ok(Arrival {
        name,
        peer,
        input,
        output,
    })
}

/// The worker's side: connects to `coordinator` (retrying for up to `patience` while nothing
/// listens there yet: a launcher may start workers before the coordinator listens), says it is
/// `name`, and proves it knows `secret`. Returns the connection, the job line next on it.
pub async fn dial(
    coordinator: &str,
    name: &str,
    secret: &RunSecret,
    patience: Duration,
) -> io::Result<(BufReader<OwnedReadHalf>, OwnedWriteHalf)> {
    let deadline = tokio::time::Instant::now() + patience;
    let stream = loop {
        match TcpStream::connect(coordinator).await {
            Ok(s) => break s,
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(%e, coordinator, "coordinator not there yet; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "cannot reach the coordinator at {coordinator} within {patience:?}: {e}"
                    ),
                ));
            }
        }
    };
    let _ = stream.set_nodelay(true);
    let (read, mut output) = stream.into_split();
    let mut input = BufReader::new(read);
    let refused = |why: String| io::Error::other(format!("coordinator {coordinator}: {why}"));
    send(
        &mut output,
        &Handshake::Hello {
            worker: name.to_string(),
        },
    )
    .await?;
    let nonce = match receive(&mut input).await.map_err(refused)? {
        Handshake::Challenge { nonce } => crate::hex::decode(&nonce).map_err(refused)?,
        other => {
            return Err(refused(format!(
                "answered {other:?} instead of a challenge"
            )));
        }
    };
    let mac = secret.mac(&nonce, name).finalize().into_bytes();
    send(
        &mut output,
        &Handshake::Proof {
            mac: crate::hex::encode(&mac),
        },
    )
    .await?;
    match receive(&mut input).await.map_err(refused)? {
        Handshake::Welcome => Ok((input, output)),
        Handshake::Refused { reason } => Err(refused(format!(
            "refused this worker: {reason} (check {SECRET_ENV})"
        ))),
        other => Err(refused(format!("answered {other:?} instead of a welcome"))),
    }
}
