//! Making sure the server packages are installed.
//!
//! The project's `scripts/install-deps` is compiled into the binary, so an installed
//! `lockbench` can set up a bare machine without the source tree. It runs only when a server
//! binary or jar is actually missing: it may need `sudo`, and `dpkg-query` for every package
//! on every `up` would be slow.

use anyhow::{Context, bail};
use std::path::PathBuf;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

const INSTALL_DEPS: &str = include_str!("../../../scripts/install-deps");

/// `program` found on `PATH` (or in `/usr/bin`, `/usr/sbin` when `PATH` lacks them).
pub(crate) fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin".into(), "/usr/sbin".into()])
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// What is missing for the managed cluster, by name: every registered system's
/// [`needs`](lockbench_core::System::needs) (programs on `PATH`, files by absolute path).
pub fn missing() -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    for need in lockbench_registry::SYSTEMS.iter().flat_map(|s| s.needs()) {
        let present = if need.starts_with('/') {
            std::path::Path::new(need).exists()
        } else {
            which(need).is_some()
        };
        if !present && !missing.iter().any(|m| m == need) {
            missing.push(need.to_string());
        }
    }
    missing
}

/// `java` from `$JAVA_HOME`, else the one on `PATH`.
pub(crate) fn java() -> PathBuf {
    std::env::var_os("JAVA_HOME")
        .map(|home| PathBuf::from(home).join("bin/java"))
        .filter(|p| p.exists())
        .or_else(|| which("java"))
        .unwrap_or_else(|| "java".into())
}

/// Runs `scripts/install-deps` (via `bash -s`) when something is missing, and checks that it
/// helped.
pub async fn ensure_installed() -> anyhow::Result<()> {
    let before = missing();
    if before.is_empty() {
        return Ok(());
    }
    tracing::info!(missing = ?before, "installing server packages with scripts/install-deps");
    let mut child = tokio::process::Command::new("bash")
        .arg("-s")
        .stdin(Stdio::piped())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot run bash for scripts/install-deps")?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(INSTALL_DEPS.as_bytes()).await?;
    drop(stdin);
    let status = child.wait().await?;
    let after = missing();
    if !status.success() || !after.is_empty() {
        bail!(
            "scripts/install-deps ({status}) did not install everything the managed cluster needs; \
             still missing: {}",
            after.join(", ")
        );
    }
    Ok(())
}
