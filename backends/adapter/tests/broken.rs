//! The contract's other half: a broken adapter is named within seconds, with the library, the
//! line and what was expected, and never passes for a working one. Each
//! mode of `broken_adapter.py` breaks the protocol one way; `good` proves the same harness
//! accepts a correct adapter, so the failures below are the adapters', not the test's.

use lockbench_adapter::{AdapterBackend, Manifest};
use lockbench_core::{Backend, BackendKind, ClientId, ErrorKind, KeyId, LockClient, Outcome};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn backend(mode: &str) -> AdapterBackend {
    backend_with(mode, &[])
}

/// `mode`'s adapter, with more arguments (`garbage-after 7`: seven good answers first).
fn backend_with(mode: &str, args: &[&str]) -> AdapterBackend {
    backend_starting_within(mode, args, lockbench_adapter::process::PROMPT)
}

/// [`backend_with`], its manifest allowing `start_timeout` for the hello.
fn backend_starting_within(mode: &str, args: &[&str], start_timeout: Duration) -> AdapterBackend {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests");
    let m = Manifest {
        library: format!("broken-{mode}"),
        system: "redis".into(),
        command: ["python3", "broken_adapter.py", mode]
            .iter()
            .chain(args)
            .map(|a| a.to_string())
            .collect(),
        lock_life: None,
        start_timeout,
        build: Vec::new(),
        env: Default::default(),
        observe: None,
        counters: Default::default(),
        dir,
    };
    let kind = BackendKind::named(&format!("lib:broken-{mode}"));
    let life = Duration::from_secs(10);
    let acquire = Duration::from_secs(15);
    AdapterBackend::new(
        kind,
        m,
        &["127.0.0.1:1".into()],
        life,
        acquire,
        "t:".into(),
        None,
    )
    .unwrap()
}

/// Runs `f` and checks it took less than the protocol's 5 s bound plus slack for a loaded
/// machine's process start.
async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    let start = Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("a broken adapter is named in bounded time, not waited for");
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    out
}

#[tokio::test]
async fn a_good_adapter_serves_a_whole_session() {
    let b = backend("good");
    let mut c = b.connect(ClientId(1)).await.expect("hello read");
    let Outcome::Ok(g) = c.acquire(KeyId(2)).await else {
        panic!("granted")
    };
    assert_eq!(g.token, None);
    assert!(c.renew(&g).await.is_ok());
    assert!(c.release(g).await.is_ok());
    let again = lockbench_core::Grant {
        key: KeyId(2),
        token: None,
        handle: 2,
    };
    assert!(matches!(
        c.release(again).await,
        Outcome::Fail(ErrorKind::LockLost)
    ));
    c.close().await;
    assert_eq!(b.broken(), None);
    assert!(
        b.info()
            .knobs
            .iter()
            .any(|(k, v)| k == "library" && v == "broken-good 0")
    );
}

#[tokio::test]
async fn a_broken_hello_fails_the_connect_naming_the_library_and_the_line() {
    for (mode, says) in [
        ("garbage-hello", "Picked up _JAVA_OPTIONS"),
        ("no-hello", "no hello line within"),
        ("exit-before-hello", "the adapter exited"),
    ] {
        let b = backend(mode);
        let err = bounded(b.connect(ClientId(1)))
            .await
            .err()
            .expect(mode)
            .to_string();
        assert!(
            err.contains(&format!("broken-{mode}")) && err.contains(says),
            "{mode}: {err}"
        );
        let broken = b.broken().expect("recorded");
        assert!(broken.contains(says), "{mode}: {broken}");
    }
}

/// The manifest's `start_timeout` holds before a run too: an adapter that says hello after
/// 5.5 s, past the probe's own budget, passes the probe when its manifest allows 10 s.
#[tokio::test]
async fn a_slow_start_within_its_start_timeout_passes_the_probe() {
    let b = backend_starting_within("slow-hello", &["5.5"], Duration::from_secs(10));
    assert!(lockbench_workloads::connect::PROBE_BUDGET < Duration::from_millis(5500));
    lockbench_workloads::connect::probe(&b)
        .await
        .expect("a hello within start_timeout is in time");
    assert_eq!(b.broken(), None);
}

#[tokio::test]
async fn a_broken_answer_is_an_unknown_outcome_and_the_run_is_told() {
    for (mode, says) in [
        ("garbage-answer", "\"OK\""),
        ("unasked-answer", "not to 6"),
        ("exit-on-acquire", "the adapter exited"),
    ] {
        let b = backend(mode);
        let mut c = b.connect(ClientId(1)).await.expect(mode);
        let out = bounded(c.acquire(KeyId(0))).await;
        assert!(
            matches!(out, Outcome::Info(ErrorKind::Other)),
            "{mode}: {out:?}"
        );
        // Once broken, the client answers `info` at once and sends nothing more.
        assert!(matches!(
            c.acquire(KeyId(0)).await,
            Outcome::Info(ErrorKind::Other)
        ));
        let broken = b.broken().expect(mode);
        assert!(
            broken.contains(&format!("broken-{mode}")) && broken.contains(says),
            "{mode}: {broken}"
        );
        c.abandon().await;
    }
}

#[tokio::test]
async fn a_second_answer_and_a_silent_release_are_caught() {
    let b = backend("second-answer");
    let mut c = b.connect(ClientId(1)).await.unwrap();
    let Outcome::Ok(g) = c.acquire(KeyId(0)).await else {
        panic!("the first answer is fine")
    };
    // The extra answer is read as the answer to the release, whose id it does not carry.
    assert!(matches!(c.release(g).await, Outcome::Info(_)));
    assert!(b.broken().unwrap().contains("not to 1"), "{:?}", b.broken());

    let b = backend("hang-on-release");
    let mut c = b.connect(ClientId(1)).await.unwrap();
    let Outcome::Ok(g) = c.acquire(KeyId(0)).await else {
        panic!("granted")
    };
    let out = bounded(c.release(g)).await;
    assert!(matches!(out, Outcome::Info(_)), "{out:?}");
    assert!(
        b.broken().unwrap().contains("no answer to request 2"),
        "{:?}",
        b.broken()
    );
}

/// An adapter that goes bad mid-run: it answers `good` requests well (acquire, release, ...),
/// then prints garbage, exits or falls silent. Every good answer is believed, the first bad
/// one is `info` within the protocol's bound and named with its request, and nothing after it
/// is sent to the adapter.
#[tokio::test]
async fn an_adapter_that_goes_bad_mid_run_is_named_at_its_first_bad_answer() {
    // 7 good answers: acquire, release, acquire, release, acquire, release, acquire; the
    // eighth request (a release) is the first one answered badly.
    for (mode, says) in [
        ("garbage-after", "\"Traceback (most recent call last):\""),
        ("exit-after", "the adapter exited"),
        ("hang-after", "no answer to request 8 (Release) within 5s"),
    ] {
        let b = backend_with(mode, &["7"]);
        let mut c = b.connect(ClientId(1)).await.expect(mode);
        let mut good = 0;
        let bad = bounded(async {
            loop {
                let Outcome::Ok(g) = c.acquire(KeyId(1)).await else {
                    panic!("{mode}: acquire {} is within the good answers", good + 1)
                };
                good += 1;
                match c.release(g).await {
                    Outcome::Ok(()) => good += 1,
                    other => return other,
                }
            }
        })
        .await;
        assert_eq!(good, 7, "{mode}: the good answers are believed");
        assert!(
            matches!(bad, Outcome::Info(ErrorKind::Other)),
            "{mode}: {bad:?}"
        );
        let broken = b.broken().expect(mode);
        assert!(
            broken.contains(&format!("broken-{mode}")) && broken.contains(says),
            "{mode}: {broken}"
        );
        assert!(matches!(
            c.acquire(KeyId(1)).await,
            Outcome::Info(ErrorKind::Other)
        ));
        c.abandon().await;
    }
}
