//! An adapter that was never installed (a fresh checkout before `scripts/install-adapters`,
//! whose Python adapters run the project's `.venv` interpreter) fails its first connect with
//! an error that names the adapter, the missing program and the command that makes it.

use lockbench_adapter::{AdapterBackend, Manifest};
use lockbench_core::{Backend, BackendKind, ClientId};
use std::time::Duration;

#[tokio::test]
async fn a_missing_interpreter_is_named_with_the_command_that_installs_it() {
    let dir = std::env::temp_dir().join(format!("lb-not-installed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let python = dir.join(".venv/bin/python3").display().to_string();
    let build = [python.as_str(), "-m", "pip", "install", "redis==5.2.1"];
    let m = Manifest {
        library: "venv-lib".into(),
        system: "redis".into(),
        command: vec![python.clone(), "adapter.py".into()],
        lock_life: None,
        start_timeout: lockbench_adapter::process::PROMPT,
        build: build.iter().map(|s| s.to_string()).collect(),
        env: Default::default(),
        observe: None,
        counters: Default::default(),
        dir: dir.clone(),
    };
    let backend = AdapterBackend::new(
        BackendKind::named("lib:venv-lib"),
        m,
        &["127.0.0.1:1".into()],
        Duration::from_secs(10),
        Duration::from_secs(15),
        "t:".into(),
        None,
    )
    .unwrap();
    let Err(e) = backend.connect(ClientId(1)).await else {
        panic!("an adapter whose interpreter is missing connected");
    };
    let said = e.to_string();
    for part in [
        "lib:venv-lib",
        &format!("{python} does not exist"),
        &format!("run its manifest's `build` ({})", build.join(" ")),
    ] {
        assert!(said.contains(part), "`{part}` missing from: {said}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
