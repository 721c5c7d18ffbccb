//! The Toxiproxy-compatible API, driven by an independent Toxiproxy client (the
//! `toxiproxy_rust` crate) and by raw HTTP, against a real Redis started on loopback for each
//! test: what a toxic claims must show in the round trips of a real server.
//!
//! Timing assertions are lower bounds (a toxic's delay is a floor: timers never fire early)
//! with generous upper bounds, so a loaded 2-core machine cannot make them flaky.

use lockbench_chaos::ToxiproxyApi;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use toxiproxy_rust::client::Client;
use toxiproxy_rust::proxy::{Proxy, ProxyPack};

/// A redis-server on a free loopback port, killed on drop.
struct Redis {
    child: Child,
    addr: SocketAddr,
}

impl Redis {
    fn start() -> Redis {
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .stdout(Stdio::null())
                .spawn()
                .expect("redis-server must be installed (scripts/install-deps)");
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(10) {
                if let Ok(mut s) = TcpStream::connect(addr)
                    && ping(&mut s).is_ok()
                {
                    return Redis { child, addr };
                }
                if child.try_wait().unwrap().is_some() {
                    break; // the port was taken meanwhile: try another
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start on loopback");
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The API served on a free loopback port by a runtime of its own (the client is blocking).
struct Api {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Api {
    fn start() -> Api {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                ToxiproxyApi::new()
                    .serve(listener, async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        Api {
            addr: addr_rx.recv().unwrap(),
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn client(&self) -> Client {
        Client::new(self.addr)
    }

    /// A proxy named `name` to `redis` on a free loopback port; returns its address.
    fn proxy(&self, name: &str, redis: &Redis) -> SocketAddr {
        let proxies = self
            .client()
            .populate(vec![ProxyPack::new(
                name.into(),
                "127.0.0.1:0".into(),
                redis.addr.to_string(),
            )])
            .unwrap();
        assert_eq!(proxies.len(), 1);
        assert!(proxies[0].proxy_pack.enabled);
        proxies[0].proxy_pack.listen.parse().unwrap()
    }

    /// One raw HTTP request: (status, JSON body or Null).
    fn http(&self, method: &str, path: &str, body: &str, agent: &str) -> (u16, serde_json::Value) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: x\r\nUser-Agent: {agent}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        s.read_to_string(&mut response).unwrap();
        let status = response[9..12].parse().unwrap();
        let (_, payload) = response.split_once("\r\n\r\n").unwrap();
        (status, serde_json::from_str(payload).unwrap_or_default())
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = self.stop.take().unwrap().send(());
        let _ = self.thread.take().unwrap().join();
    }
}

/// One PING round trip on `s`.
fn ping(s: &mut TcpStream) -> std::io::Result<Duration> {
    s.set_nodelay(true)?;
    let start = Instant::now();
    s.write_all(b"PING\r\n")?;
    let mut reply = [0u8; 7];
    s.read_exact(&mut reply)?;
    assert_eq!(&reply, b"+PONG\r\n");
    Ok(start.elapsed())
}

/// `n` PING round trips on one new connection to `addr`, sorted.
fn round_trips(addr: SocketAddr, n: usize) -> Vec<Duration> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut rtts: Vec<Duration> = (0..n).map(|_| ping(&mut s).unwrap()).collect();
    rtts.sort();
    rtts
}

fn median(rtts: &[Duration]) -> Duration {
    rtts[rtts.len() / 2]
}

/// A Redis, an API, a proxy `redis` to it (its address) and the client's handle on it.
fn proxied_redis() -> (Redis, Api, SocketAddr, Proxy) {
    let redis = Redis::start();
    let api = Api::start();
    let via = api.proxy("redis", &redis);
    let proxy = api.client().find_and_reset_proxy("redis").unwrap();
    (redis, api, via, proxy)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn latency_toxics_add_to_every_round_trip_and_go_away_when_removed() {
    let (_redis, api, via, proxy) = proxied_redis();
    let client = api.client();

    let clean = round_trips(via, 20);
    assert!(median(&clean) < ms(25), "clean proxy: {clean:?}");

    proxy.with_latency("downstream".into(), 50, 0, 1.0);
    let slow = round_trips(via, 10);
    assert!(slow[0] >= ms(50), "every reply waits 50 ms: {slow:?}");
    assert!(median(&slow) < ms(50) + ms(1000), "{slow:?}");

    // Toxiproxy's listing shows it, with its attributes.
    let shown = client.find_proxy("redis").unwrap().proxy_pack.toxics;
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].name, "latency_downstream");
    assert_eq!(shown[0].r#type, "latency");
    assert_eq!(shown[0].attributes["latency"], 50);

    // Requests too (upstream), on top of the replies' 50 ms.
    proxy.with_latency("upstream".into(), 30, 0, 1.0);
    let slower = round_trips(via, 10);
    assert!(slower[0] >= ms(80), "50 ms down + 30 ms up: {slower:?}");

    proxy.delete_all_toxics().unwrap();
    assert!(proxy.toxics().unwrap().is_empty());
    let healed = round_trips(via, 20);
    assert!(median(&healed) < ms(25), "toxics removed: {healed:?}");

    // Toxicity 0: the toxic is listed but reaches no link.
    proxy.with_latency("downstream".into(), 500, 0, 0.0);
    let spared = round_trips(via, 5);
    assert!(
        spared[4] < ms(500),
        "toxicity 0 applies to no link: {spared:?}"
    );
}

#[test]
fn a_timeout_toxic_black_holes_and_closes_when_non_zero() {
    let (_redis, _api, via, proxy) = proxied_redis();

    // timeout = 0: a black hole, connection kept.
    let mut held = TcpStream::connect(via).unwrap();
    ping(&mut held).unwrap();
    proxy.with_timeout("downstream".into(), 0, 1.0);
    held.set_read_timeout(Some(ms(500))).unwrap();
    let err = ping(&mut held).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "no reply, no close: {err:?}"
    );

    // Removed: the kept connection answers again (its swallowed reply is gone), and so does a
    // new one.
    proxy.delete_all_toxics().unwrap();
    held.set_read_timeout(Some(ms(5000))).unwrap();
    ping(&mut held).expect("the connection survived the black hole");
    assert!(median(&round_trips(via, 5)) < ms(25));

    // timeout > 0: data dropped, the link closed that long after the toxic reached it.
    let mut doomed = TcpStream::connect(via).unwrap();
    ping(&mut doomed).unwrap();
    let added = Instant::now();
    proxy.with_timeout("upstream".into(), 300, 1.0);
    doomed.set_read_timeout(Some(ms(10_000))).unwrap();
    doomed.write_all(b"PING\r\n").unwrap();
    let mut buf = [0u8; 16];
    let n = doomed.read(&mut buf).unwrap_or(0);
    let closed_after = added.elapsed();
    assert_eq!(n, 0, "closed without a reply: {:?}", &buf[..n]);
    assert!(
        closed_after >= ms(300),
        "not before the timeout: {closed_after:?}"
    );
    assert!(closed_after < ms(5000), "{closed_after:?}");
}

#[test]
fn a_disabled_proxy_refuses_and_closes_then_comes_back_on_its_port() {
    let (_redis, api, via, proxy) = proxied_redis();
    let mut open = TcpStream::connect(via).unwrap();
    ping(&mut open).unwrap();
    open.set_read_timeout(Some(ms(5000))).unwrap();

    proxy
        .with_down(|| {
            let err = TcpStream::connect(via).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err:?}");
            let mut buf = [0u8; 8];
            let closed = matches!(open.read(&mut buf), Ok(0) | Err(_));
            assert!(closed, "open links are closed");
            let (status, shown) = api.http("GET", "/proxies/redis", "", "test");
            assert_eq!((status, &shown["enabled"]), (200, &false.into()));
        })
        .unwrap();

    assert!(median(&round_trips(via, 5)) < ms(25), "back on {via}");
    assert!(api.client().find_proxy("redis").unwrap().proxy_pack.enabled);
}

#[test]
fn the_api_answers_like_toxiproxy() {
    let redis = Redis::start();
    let api = Api::start();
    let client = api.client();
    assert!(client.is_running());
    let version: serde_json::Value = serde_json::from_str(&client.version().unwrap()).unwrap();
    assert!(
        version["version"]
            .as_str()
            .unwrap()
            .starts_with("lockbench-")
    );

    let create = format!(
        r#"{{"name":"r","listen":"127.0.0.1:0","upstream":"{}"}}"#,
        redis.addr
    );
    let (status, shown) = api.http("POST", "/proxies", &create, "test");
    assert_eq!(status, 201, "{shown}");
    assert_eq!(shown["enabled"], true);
    assert_eq!(shown["toxics"], serde_json::json!([]));
    let listen: SocketAddr = shown["listen"].as_str().unwrap().parse().unwrap();
    assert_ne!(listen.port(), 0, "the chosen port is shown");
    assert_eq!(api.http("POST", "/proxies", &create, "test").0, 409);
    assert!(client.all().unwrap().contains_key("r"));

    let (status, err) = api.http("GET", "/proxies/nope", "", "test");
    assert_eq!(
        (status, err["error"].as_str()),
        (404, Some("proxy not found"))
    );
    assert_eq!(err["status"], 404);

    let bandwidth = r#"{"type":"bandwidth","attributes":{"rate":10}}"#;
    let (status, err) = api.http("POST", "/proxies/r/toxics", bandwidth, "test");
    assert_eq!(status, 400);
    assert!(
        err["error"].as_str().unwrap().contains("bandwidth"),
        "{err}"
    );

    let toxic =
        r#"{"name":"slow","type":"latency","stream":"upstream","attributes":{"latency":40}}"#;
    let (status, shown) = api.http("POST", "/proxies/r/toxics", toxic, "test");
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["toxicity"], 1.0);
    assert_eq!(api.http("POST", "/proxies/r/toxics", toxic, "test").0, 409);
    let patch = r#"{"attributes":{"jitter":5}}"#;
    let (status, shown) = api.http("PATCH", "/proxies/r/toxics/slow", patch, "test");
    assert_eq!(status, 200, "{shown}");
    assert_eq!(
        shown["attributes"],
        serde_json::json!({"latency": 40, "jitter": 5})
    );
    let (status, shown) = api.http("GET", "/proxies/r/toxics/slow", "", "test");
    assert_eq!((status, &shown["stream"]), (200, &"upstream".into()));
    assert!(
        round_trips(listen, 3)[0] >= ms(35),
        "latency 40 ± 5 on requests"
    );
    assert_eq!(api.http("GET", "/proxies/r/toxics/nope", "", "test").0, 404);

    // Browsers are refused (Toxiproxy's guard).
    assert_eq!(api.http("GET", "/proxies", "", "Mozilla/5.0").0, 403);

    // Reset: every proxy enabled, every toxic gone.
    assert_eq!(
        api.http("POST", "/proxies/r", r#"{"enabled":false}"#, "test")
            .0,
        200
    );
    assert_eq!(api.http("POST", "/reset", "", "test").0, 204);
    let (_, shown) = api.http("GET", "/proxies/r", "", "test");
    assert_eq!(shown["enabled"], true);
    assert_eq!(shown["toxics"], serde_json::json!([]));
    assert!(median(&round_trips(listen, 5)) < ms(25));

    assert_eq!(api.http("DELETE", "/proxies/r", "", "test").0, 204);
    assert_eq!(api.http("DELETE", "/proxies/r", "", "test").0, 404);
    assert!(
        TcpStream::connect(listen).is_err(),
        "a deleted proxy stops listening"
    );
}

/// Regression: every chunk used to wait for a tokio timer even with no toxic, and tokio's
/// timer rounds up to its next millisecond tick, so a clean link added 1 to 2 ms to every
/// round trip (redis-benchmark PING p50 2.3 ms through the proxy vs 0.02 ms direct). The
/// fastest of 50 round trips must now be well under one tick.
#[test]
fn a_clean_proxy_waits_for_no_timer_tick() {
    let (_redis, _api, via, _proxy) = proxied_redis();
    let rtts = round_trips(via, 50);
    assert!(rtts[0] < ms(1), "fastest clean round trip: {:?}", rtts[0]);
}
