//! A lock client's own connection to one server, one request at a time, with no task of its
//! own: the request is written and its reply read by the client's task itself.
//!
//! Why not redis-rs's [`redis::aio::MultiplexedConnection`] for the lock requests: it runs a
//! driver task per connection and hands every request to it through a channel and its reply
//! back through a oneshot, so each request costs two task wake-ups and a queue beside the two
//! system calls. A lock client never has two requests in flight on its connection, so none of
//! that buys anything there. In a bare loop of the lock scripts, 50 connections on two threads,
//! the client's CPU per acquisition fell from 19.4-21.9 µs to 17.5-19.3; with fewer client
//! threads beside local servers, it took `redis-setnx` below Redis's own CPU per acquisition
//! (docs/performance.md). redis-rs still writes the requests ([`Cmd`]) and parses the replies
//! ([`redis::parse_redis_value`]); this module only moves the bytes.
//!
//! A request cut short (its caller's timeout, the end of a run) leaves its reply on the way:
//! the connection is then [`Direct::is_spent`] and the client opens a new one, as it does after
//! a broken one. TLS connections keep redis-rs's multiplexed connection ([`LockConnection`]).

use crate::connect::CONNECT_TIMEOUT;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use std::io;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The reply buffer's first size; the lock scripts' replies are a few bytes.
const REPLY_CAPACITY: usize = 512;

/// A plain TCP connection that carries one request at a time.
#[derive(Debug)]
pub(crate) struct Direct {
    stream: TcpStream,
    request: Vec<u8>,
    reply: Vec<u8>,
    response_timeout: Duration,
    /// A request was written and its reply not (wholly) read: the next reply on the wire is
    /// not the next request's.
    in_flight: bool,
}

impl Direct {
    /// Connects to `address` (`TCP_NODELAY`, as every lock request waits for its reply) within
    /// [`CONNECT_TIMEOUT`]; with `auth`, sends `AUTH [user] password` first.
    pub(crate) async fn open(
        address: &str,
        response_timeout: Duration,
        auth: Option<Cmd>,
    ) -> RedisResult<Direct> {
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await
        {
            Ok(stream) => stream?,
            Err(_) => return Err(timed_out("connect").into()),
        };
        stream.set_nodelay(true)?;
        let mut direct = Direct {
            stream,
            request: Vec::with_capacity(256),
            reply: Vec::with_capacity(REPLY_CAPACITY),
            response_timeout,
            in_flight: false,
        };
        if let Some(auth) = auth {
            direct.request(&auth).await?.extract_error()?;
        }
        Ok(direct)
    }

    /// `true` once a request was cut short: its reply may still arrive, so the connection
    /// cannot carry another.
    pub(crate) fn is_spent(&self) -> bool {
        self.in_flight
    }

    /// Writes `cmd` and reads its one reply within the response timeout.
    pub(crate) async fn request(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        if self.in_flight {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "an earlier request on this connection was cut short",
            )
            .into());
        }
        self.request.clear();
        cmd.write_packed_command(&mut self.request);
        self.in_flight = true;
        let timeout = self.response_timeout;
        let value = match tokio::time::timeout(timeout, self.exchange()).await {
            Ok(value) => value?,
            Err(_) => return Err(timed_out("reply").into()),
        };
        self.in_flight = false;
        Ok(value)
    }

    async fn exchange(&mut self) -> RedisResult<Value> {
        self.stream.write_all(&self.request).await?;
        self.reply.clear();
        loop {
            if self.stream.read_buf(&mut self.reply).await? == 0 {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
            }
            if !self.reply.ends_with(b"\r\n") {
                continue;
            }
            match redis::parse_redis_value(&self.reply) {
                Ok(value) => return Ok(value),
                Err(e) if incomplete(&e) => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// `true` when the parser ran out of bytes: more of the reply is on its way. Parsing bytes in
/// memory reads nothing, so the only I/O error it gives is the end of its input.
fn incomplete(e: &RedisError) -> bool {
    e.is_io_error()
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, format!("no {what} in time"))
}

/// A lock client's connection: [`Direct`] on plain TCP, redis-rs's multiplexed one with TLS.
#[derive(Debug)]
pub(crate) enum LockConnection {
    Direct(Direct),
    Multiplexed(MultiplexedConnection),
}

impl LockConnection {
    /// `true` when a cut-short request left the connection unusable.
    pub(crate) fn is_spent(&self) -> bool {
        match self {
            LockConnection::Direct(d) => d.is_spent(),
            LockConnection::Multiplexed(_) => false,
        }
    }
}

impl ConnectionLike for LockConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            LockConnection::Direct(d) => Box::pin(d.request(cmd)),
            LockConnection::Multiplexed(m) => m.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            LockConnection::Direct(_) => Box::pin(async {
                Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "a lock client's direct connection sends no pipelines",
                )
                .into())
            }),
            LockConnection::Multiplexed(m) => m.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        0
    }
}
