//! The protected resource: a per-key register that checks fencing tokens.
//!
//! Each key's highest token seen is an atomic, and `fetch_max` both records a token and returns
//! the previous highest in one step, so deciding "stale or not" is race-free without a lock even
//! with every client writing at once.
//!
//! Clients inside the coordinator write to it directly (no IPC on the hot path). Clients in
//! worker processes (which a fault can pause or cut off) reach it as a service: a
//! [`ResourceService`] in the coordinator listens on TCP (the bridge address when client hosts
//! exist, else loopback) and speaks one line per write, `W <key> <token|-> <client> <grant>`
//! answered by `A <stale>` (accepted) or `R <stale>` (rejected), `<stale>` being `1`, `0` or
//! `-` (no token); `<grant>` says which of the client's grants it holds (1 for its first), so
//! the history pairs the write with its grant though the two are stamped on different clocks
//! (`Op::grant`). The service, not the worker, records the `write` op in the history, on the run's
//! clock, at the moment the resource decided: it is the resource's view that counts, and a
//! worker killed right after writing cannot lose it. The lines are written and read by
//! [`write_line`] and [`parse_write`], and by [`WriteVerdict::line`] and [`parse_reply`]: public
//! so a benchmark can time them without a socket.

use lockbench_core::scenario::ResourceMode;
use lockbench_core::{ClientId, FencingToken, KeyId, Op, OpF, OpType, RunClock};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

/// What the resource made of one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteVerdict {
    /// The write took effect.
    pub accepted: bool,
    /// A higher token had been seen before this one; `None` when the write had no token.
    pub stale: Option<bool>,
}

/// Per-key highest-token registers, in fenced or unfenced mode.
#[derive(Debug)]
pub struct FencedResource {
    mode: ResourceMode,
    highest: Box<[AtomicU64]>,
    /// Stale writes seen ([`ResourceMode::Misreporting`] lies about every other one).
    stale_seen: AtomicU64,
}

impl FencedResource {
    /// A resource for `keys` lock keys.
    pub fn new(mode: ResourceMode, keys: u32) -> FencedResource {
        FencedResource {
            mode,
            highest: (0..keys).map(|_| AtomicU64::new(0)).collect(),
            stale_seen: AtomicU64::new(0),
        }
    }

    /// Writes with `token` to `key`. Fenced mode rejects a stale token; unfenced mode accepts
    /// everything but still reports staleness; misreporting mode (deliberately broken) accepts
    /// the first, third, ... stale write and reports it fresh. A write without a token cannot
    /// be judged and is always accepted.
    pub fn write(&self, key: KeyId, token: Option<FencingToken>) -> WriteVerdict {
        let Some(FencingToken(t)) = token else {
            return WriteVerdict {
                accepted: true,
                stale: None,
            };
        };
        let previous = self.highest[key.0 as usize].fetch_max(t, Ordering::AcqRel);
        let stale = t < previous;
        match self.mode {
            ResourceMode::Misreporting
                if stale
                    && self
                        .stale_seen
                        .fetch_add(1, Ordering::Relaxed)
                        .is_multiple_of(2) =>
            {
                WriteVerdict {
                    accepted: true,
                    stale: Some(false),
                }
            }
            ResourceMode::Unfenced => WriteVerdict {
                accepted: true,
                stale: Some(stale),
            },
            ResourceMode::Fenced | ResourceMode::Misreporting => WriteVerdict {
                accepted: !stale,
                stale: Some(stale),
            },
        }
    }
}

impl WriteVerdict {
    /// The service's reply line for this verdict, with its newline.
    pub fn line(self) -> &'static str {
        match (self.accepted, self.stale) {
            (true, Some(true)) => "A 1\n",
            (true, Some(false)) => "A 0\n",
            (true, None) => "A -\n",
            (false, Some(false)) => "R 0\n",
            (false, _) => "R 1\n",
        }
    }

    /// The `write` op this verdict is recorded as.
    pub fn op(
        self,
        time: lockbench_core::Nanos,
        client: ClientId,
        key: KeyId,
        token: Option<FencingToken>,
    ) -> Op {
        let mut op = Op::complete(
            time,
            client,
            OpF::Write,
            key,
            if self.accepted {
                OpType::Ok
            } else {
                OpType::Fail
            },
            token,
            (!self.accepted).then_some(lockbench_core::ErrorKind::StaleToken),
        );
        op.stale = self.stale;
        op
    }
}

/// The fenced resource served over TCP to worker processes.
#[derive(Debug)]
pub struct ResourceService {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl ResourceService {
    /// Serves `resource` on `bind` (port chosen by the kernel); every write is recorded as a
    /// `write` op into `history`, stamped with `clock`.
    pub async fn start(
        resource: Arc<FencedResource>,
        bind: IpAddr,
        clock: RunClock,
        history: UnboundedSender<Vec<Op>>,
    ) -> io::Result<ResourceService> {
        let listener = TcpListener::bind((bind, 0)).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let _ = conn.set_nodelay(true);
                tokio::spawn(serve_conn(conn, resource.clone(), clock, history.clone()));
            }
        });
        Ok(ResourceService { addr, task })
    }

    /// Where workers reach it.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ResourceService {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve_conn(
    conn: TcpStream,
    resource: Arc<FencedResource>,
    clock: RunClock,
    history: UnboundedSender<Vec<Op>>,
) {
    let (read, mut write) = conn.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Some((key, token, client, grant)) = parse_write(&line) else {
            let _ = write.write_all(b"E bad request\n").await;
            continue;
        };
        // The write spans [arrival, decision recorded]: the fencing audit orders writes by
        // these intervals, not by the resource's word.
        let mut invoked = Op::invoke(clock.now(), client, OpF::Write, key);
        invoked.grant = grant;
        let verdict = resource.write(key, token);
        let mut done = verdict.op(clock.now(), client, key, token);
        done.grant = grant;
        let _ = history.send(vec![invoked, done]);
        if write.write_all(verdict.line().as_bytes()).await.is_err() {
            break;
        }
    }
}

/// The line a worker sends for a write of `token` to `key` by `client`, holding its
/// `grant`-th grant.
pub fn write_line(key: KeyId, token: Option<FencingToken>, client: ClientId, grant: u32) -> String {
    match token {
        Some(FencingToken(t)) => format!("W {} {t} {} {grant}\n", key.0, client.0),
        None => format!("W {} - {} {grant}\n", key.0, client.0),
    }
}

/// A write line's key, token, client and (when said) the client's grant.
pub fn parse_write(line: &str) -> Option<(KeyId, Option<FencingToken>, ClientId, Option<u32>)> {
    let mut parts = line.split_ascii_whitespace();
    if parts.next()? != "W" {
        return None;
    }
    let key = KeyId(parts.next()?.parse().ok()?);
    let token = match parts.next()? {
        "-" => None,
        t => Some(FencingToken(t.parse().ok()?)),
    };
    let client = ClientId(parts.next()?.parse().ok()?);
    let grant = match parts.next() {
        Some(g) => Some(g.parse().ok()?),
        None => None,
    };
    Some((key, token, client, grant))
}

/// How long a worker waits for the service's answer to one write. A worker cut off by a
/// partition must not stay stuck in a write (it would never release nor notice the heal); a
/// write that timed out may still arrive later (the closed socket's data is retransmitted), and
/// the service then records it at its arrival, as a delayed packet.
const REMOTE_WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// How one client slot reaches the resource: directly (in the coordinator) or over TCP (in a
/// worker process).
#[derive(Debug)]
pub enum ResourceConn {
    /// In the coordinator: a direct call; the client loop records the `write` op itself.
    Local(Arc<FencedResource>),
    /// In a worker: the service records the `write` op.
    Remote {
        /// The service's address (reconnected to after an error).
        addr: SocketAddr,
        /// The open connection, if any.
        conn: Option<BufReader<TcpStream>>,
    },
}

impl ResourceConn {
    /// A connection to the service at `addr` (opened on first use).
    pub fn remote(addr: SocketAddr) -> ResourceConn {
        ResourceConn::Remote { addr, conn: None }
    }

    /// `true` when writes are recorded by the service rather than by the caller.
    pub fn records_itself(&self) -> bool {
        matches!(self, ResourceConn::Remote { .. })
    }

    /// Writes `token` to `key` as `client`, holding the client's `grant`-th grant.
    pub async fn write(
        &mut self,
        key: KeyId,
        token: Option<FencingToken>,
        client: ClientId,
        grant: u32,
    ) -> io::Result<WriteVerdict> {
        match self {
            ResourceConn::Local(r) => Ok(r.write(key, token)),
            ResourceConn::Remote { addr, conn } => {
                let result = tokio::time::timeout(
                    REMOTE_WRITE_TIMEOUT,
                    remote_write(addr, conn, key, token, (client, grant)),
                )
                .await
                .unwrap_or_else(|_| {
                    Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "resource service did not answer (partitioned?)",
                    ))
                });
                if result.is_err() {
                    *conn = None;
                }
                result
            }
        }
    }
}

async fn remote_write(
    addr: &SocketAddr,
    conn: &mut Option<BufReader<TcpStream>>,
    key: KeyId,
    token: Option<FencingToken>,
    (client, grant): (ClientId, u32),
) -> io::Result<WriteVerdict> {
    if conn.is_none() {
        let c = TcpStream::connect(*addr).await?;
        c.set_nodelay(true)?;
        *conn = Some(BufReader::new(c));
    }
    let c = conn.as_mut().expect("connected above");
    let line = write_line(key, token, client, grant);
    c.get_mut().write_all(line.as_bytes()).await?;
    let mut reply = String::new();
    if c.read_line(&mut reply).await? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "resource service closed",
        ));
    }
    parse_reply(&reply).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("resource service: {reply:?}"),
        )
    })
}

/// The verdict a reply line (`A|R <stale>`) gives.
pub fn parse_reply(line: &str) -> Option<WriteVerdict> {
    let mut parts = line.split_ascii_whitespace();
    let accepted = match parts.next()? {
        "A" => true,
        "R" => false,
        _ => return None,
    };
    let stale = match parts.next()? {
        "1" => Some(true),
        "0" => Some(false),
        "-" => None,
        _ => return None,
    };
    Some(WriteVerdict { accepted, stale })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_service_gives_the_same_verdicts_and_records_every_write() {
        let resource = Arc::new(FencedResource::new(ResourceMode::Fenced, 1));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let clock = RunClock::start();
        let service = ResourceService::start(resource, "127.0.0.1".parse().unwrap(), clock, tx)
            .await
            .unwrap();
        let mut conn = ResourceConn::remote(service.addr());
        let t = |n| Some(FencingToken(n));
        let v = conn.write(KeyId(0), t(5), ClientId(1), 1).await.unwrap();
        assert!(v.accepted && v.stale == Some(false));
        let v = conn.write(KeyId(0), t(3), ClientId(2), 1).await.unwrap();
        assert!(!v.accepted && v.stale == Some(true));
        let v = conn.write(KeyId(0), None, ClientId(2), 2).await.unwrap();
        assert!(v.accepted && v.stale.is_none());
        let mut all = Vec::new();
        while all.len() < 6 {
            all.extend(rx.recv().await.unwrap());
        }
        // Each write is an invoke at its arrival and a completion at the decision.
        let (invokes, ops): (Vec<Op>, Vec<Op>) =
            all.into_iter().partition(|o| o.ty == OpType::Invoke);
        assert_eq!(invokes.len(), 3);
        assert!(
            invokes
                .iter()
                .zip(&ops)
                .all(|(i, o)| i.f == OpF::Write && i.client == o.client && i.time <= o.time)
        );
        assert_eq!(ops[1].ty, OpType::Fail);
        assert_eq!(ops[1].client, ClientId(2));
        assert_eq!(ops[1].stale, Some(true));
        // Each write names the grant its writer held.
        let grants: Vec<_> = ops.iter().map(|o| o.grant).collect();
        assert_eq!(grants, [Some(1), Some(1), Some(2)]);
        assert!(conn.records_itself());
    }

    #[test]
    fn the_service_lines_read_back_as_written() {
        let t = Some(FencingToken(42));
        assert_eq!(write_line(KeyId(3), t, ClientId(9), 2), "W 3 42 9 2\n");
        assert_eq!(
            parse_write(&write_line(KeyId(3), t, ClientId(9), 2)),
            Some((KeyId(3), t, ClientId(9), Some(2)))
        );
        assert_eq!(
            parse_write(&write_line(KeyId(0), None, ClientId(1), 1)),
            Some((KeyId(0), None, ClientId(1), Some(1)))
        );
        for (accepted, stale) in [(true, Some(true)), (true, Some(false)), (true, None)]
            .into_iter()
            .chain([(false, Some(true)), (false, Some(false))])
        {
            let v = WriteVerdict { accepted, stale };
            assert_eq!(parse_reply(v.line()), Some(v), "{:?}", v.line());
        }
        assert_eq!(parse_reply("E bad request\n"), None);
    }

    #[test]
    fn fenced_mode_rejects_lower_tokens_and_unfenced_accepts_but_flags_them() {
        let fenced = FencedResource::new(ResourceMode::Fenced, 2);
        let t = |n| Some(FencingToken(n));
        assert_eq!(
            fenced.write(KeyId(0), t(5)),
            WriteVerdict {
                accepted: true,
                stale: Some(false)
            }
        );
        assert_eq!(
            fenced.write(KeyId(0), t(5)),
            WriteVerdict {
                accepted: true,
                stale: Some(false)
            }
        );
        assert_eq!(
            fenced.write(KeyId(0), t(3)),
            WriteVerdict {
                accepted: false,
                stale: Some(true)
            }
        );
        assert_eq!(
            fenced.write(KeyId(1), t(3)),
            WriteVerdict {
                accepted: true,
                stale: Some(false)
            }
        );
        let unfenced = FencedResource::new(ResourceMode::Unfenced, 1);
        unfenced.write(KeyId(0), t(9));
        assert_eq!(
            unfenced.write(KeyId(0), t(2)),
            WriteVerdict {
                accepted: true,
                stale: Some(true)
            }
        );
        assert_eq!(
            unfenced.write(KeyId(0), None),
            WriteVerdict {
                accepted: true,
                stale: None
            }
        );
    }

    #[test]
    fn the_misreporting_mode_accepts_every_other_stale_write_as_fresh() {
        let broken = FencedResource::new(ResourceMode::Misreporting, 1);
        let t = |n| Some(FencingToken(n));
        let (lie, truth) = (
            WriteVerdict {
                accepted: true,
                stale: Some(false),
            },
            WriteVerdict {
                accepted: false,
                stale: Some(true),
            },
        );
        assert_eq!(broken.write(KeyId(0), t(9)).stale, Some(false));
        let stale: Vec<_> = (0..4).map(|_| broken.write(KeyId(0), t(2))).collect();
        assert_eq!(stale, vec![lie, truth, lie, truth]);
    }
}
