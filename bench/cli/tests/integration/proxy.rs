//! `lockbench proxy`: the binary serves Toxiproxy's API with the proxies of its `--config`,
//! forwards through them, and exits 0 on SIGTERM with every port closed. (The API itself is
//! tested against a real Redis with a Toxiproxy client in `chaos/tests/integration/toxiproxy.rs`.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A one-shot upstream that greets every connection (the proxy is protocol-blind).
fn greeter() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let _ = s.write_all(b"hello\n");
        }
    });
    addr
}

fn get(api: &str, path: &str) -> (u16, serde_json::Value) {
    let mut s = TcpStream::connect(api).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    (
        response[9..12].parse().unwrap(),
        serde_json::from_str(body).unwrap(),
    )
}

#[test]
fn proxy_serves_its_config_and_stops_cleanly_on_sigterm() {
    let dir = std::env::temp_dir().join(format!("lockbench-proxy-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let upstream = greeter();
    let free = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let config = dir.join("toxiproxy.json");
    std::fs::write(
        &config,
        format!(
            r#"[{{"name":"greeter","listen":"{free}","upstream":"{upstream}","enabled":true}},
                {{"name":"spare","listen":"127.0.0.1:0","upstream":"{upstream}","enabled":false}}]"#
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["proxy", "--api", "127.0.0.1:0", "--config"])
        .arg(&config)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let api = loop {
        let line = lines.next().expect("an API line").unwrap();
        if let Some(url) = line.strip_prefix("lockbench proxy: Toxiproxy API on http://") {
            break url.to_string();
        }
    };

    let (status, proxies) = get(&api, "/proxies");
    assert_eq!(status, 200, "{proxies}");
    assert_eq!(proxies["greeter"]["listen"], free.to_string());
    assert_eq!(proxies["greeter"]["enabled"], true);
    assert_eq!(proxies["spare"]["enabled"], false);
    let mut greeting = String::new();
    BufReader::new(TcpStream::connect(free).unwrap())
        .read_line(&mut greeting)
        .unwrap();
    assert_eq!(greeting, "hello\n", "bytes flow through the proxy");

    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    assert!(
        TcpStream::connect(free).is_err(),
        "the proxy port is closed"
    );
    assert!(TcpStream::connect(&api).is_err(), "the API port is closed");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_config_fails_naming_the_file_and_the_field() {
    let dir = std::env::temp_dir().join(format!("lockbench-proxy-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("toxiproxy.json");
    std::fs::write(&config, r#"[{"name":"r","listen":"127.0.0.1:0"}]"#).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["proxy", "--api", "127.0.0.1:0", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("toxiproxy.json"), "{stderr}");
    assert!(
        stderr.contains("missing required field: upstream"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
