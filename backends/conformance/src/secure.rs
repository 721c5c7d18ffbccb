//! The contract for a misconfigured secure connection: each bad setting (a wrong
//! CA, password, port, certificate or permission) fails in under [`FAST`], naming the server,
//! the setting and the fix, and never showing the password; and the small pieces every
//! backend's TLS tests share (a free port, a test directory, a password in the environment, a
//! server started as its launch says, the error of a first connect).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a bad setting may take to fail (under 2 s).
pub const FAST: Duration = Duration::from_secs(2);

/// A free loopback port (for a server a test starts).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A directory of `system`'s test `test` and this process alone, emptied; removed with
/// everything in it when the guard is dropped (declare it before the servers that use it, or
/// keep it as a struct's last field, so that it goes after them).
pub fn test_dir(system: &str, test: &str) -> TestDir {
    let dir =
        std::env::temp_dir().join(format!("lb-{system}-secure-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TestDir(dir)
}

/// A test's directory ([`test_dir`]); a test leaves nothing behind in the temporary
/// directory, however it ends (a failed assertion unwinds through the drop too).
#[derive(Debug)]
pub struct TestDir(PathBuf);

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Sets environment variable `var` to `value`; each test must name a variable of its own.
pub fn export(var: &str, value: &str) {
    // SAFETY: each test names a variable no other test reads or writes.
    unsafe { std::env::set_var(var, value) };
}

/// Panics unless `err` came within [`FAST`] (`took`), names `server`, says each of `wants`
/// and does not show `secret`. Prints the error and its time (the docs' errors table).
pub fn assert_clear(err: &str, took: Duration, server: &str, wants: &[&str], secret: &str) {
    eprintln!("after {took:?}: {err}");
    assert!(took < FAST, "took {took:?}: {err}");
    assert!(
        err.contains(server),
        "does not name the server {server}: {err}"
    );
    for w in wants {
        assert!(err.contains(w), "does not say `{w}`: {err}");
    }
    assert!(!err.contains(secret), "shows the password: {err}");
}

/// The first member of `system`'s servers on 127.0.0.1 at a free port, every other member at
/// a free port nobody listens on (so a pair's start script finds no primary).
struct FirstMember {
    port: u16,
    peer: u16,
}

impl lockbench_core::launch::Layout for FirstMember {
    fn ip(&self, _spec: &lockbench_core::ServerSpec) -> std::net::IpAddr {
        std::net::IpAddr::from([127, 0, 0, 1])
    }
    fn client_port(&self, spec: &lockbench_core::ServerSpec) -> u16 {
        if spec.id == 1 { self.port } else { self.peer }
    }
    fn peer_ports(&self, _spec: &lockbench_core::ServerSpec) -> Vec<u16> {
        Vec::new()
    }
}

/// Starts `system`'s first member in `dir/<its name>` as its launch says (secure when `secure`
/// is given): the launch's directories, its files (mode 0600) and its program, its output in
/// `dir/log`. The child and the port it listens on; the caller waits until it answers.
pub fn start_first_member(
    system: &dyn lockbench_core::System,
    dir: &Path,
    secure: Option<&lockbench_core::launch::Secure>,
) -> (std::process::Child, u16) {
    let layout = FirstMember {
        port: free_port(),
        peer: free_port(),
    };
    let spec = &system.servers()[0];
    let site = lockbench_core::launch::Site {
        topology: &layout,
        bind: std::net::IpAddr::from([127, 0, 0, 1]),
        root: dir.join(spec.name),
        log: None,
        cluster_token: "test".into(),
        secure,
    };
    let child = spawn(system, spec, &site, &dir.join("log"));
    (child, layout.port)
}

/// Starts `spec` at `site` as its launch says: the launch's directories, its files (mode 0600)
/// and its program, its output in `log`. The child; the caller waits until it answers.
pub fn spawn(
    system: &dyn lockbench_core::System,
    spec: &lockbench_core::ServerSpec,
    site: &lockbench_core::launch::Site,
    log: &Path,
) -> std::process::Child {
    use std::os::unix::fs::OpenOptionsExt;
    let launch = system.launch(spec, site);
    for d in &launch.dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    for f in &launch.files {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&f.path)
            .unwrap();
        std::io::Write::write_all(&mut file, f.contents.as_bytes()).unwrap();
    }
    let log = std::fs::File::create(log).unwrap();
    std::process::Command::new(launch.program)
        .args(&launch.args)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// The error of `backend`'s first connect, and how long it took; panics when it connects
/// (a misconfigured client must not).
pub async fn first_connect_error<B: lockbench_core::Backend>(backend: &B) -> (String, Duration) {
    use lockbench_core::LockClient;
    let t0 = std::time::Instant::now();
    match backend.connect(lockbench_core::ClientId(0)).await {
        Err(e) => (e.to_string(), t0.elapsed()),
        Ok(c) => {
            c.close().await;
            panic!("the misconfigured client connected")
        }
    }
}
