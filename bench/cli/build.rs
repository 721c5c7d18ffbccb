//! The commit the binary is built from, for `lockbench --version` and results.json.
//!
//! Two runs are only comparable when one knows which code produced them, and the crate version
//! does not change from commit to commit. So this sets `LOCKBENCH_COMMIT` to the short hash,
//! `-dirty` when tracked files differ from it, and the commit's date (`abc1234 2026-11-28`),
//! or to `unknown commit` where there is no git checkout (the Docker build context leaves
//! `.git` out) or no git. Plain `git` commands: no build-dependency to compile.
//!
//! It runs again when HEAD moves (a checkout, a commit: `.git/HEAD` and the branch's ref), not
//! on every edit, which would rebuild the binary on every change anywhere in the tree; so
//! `-dirty` says how the tree was when HEAD last moved, and is exact in a fresh clone (CI, a
//! release build).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let commit = describe().unwrap_or_else(|| "unknown commit".to_string());
    println!("cargo:rustc-env=LOCKBENCH_COMMIT={commit}");
    for path in watched() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// `abc1234 2026-11-28`, or `abc1234-dirty 2026-11-28`; `None` outside a git checkout.
fn describe() -> Option<String> {
    let line = git(&["log", "-1", "--date=short", "--format=%h %cd"])?;
    let (hash, date) = line.split_once(' ')?;
    // --no-optional-locks: never take the index lock from other git commands running here.
    let changes = git(&[
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
    ])?;
    let dirty = if changes.is_empty() { "" } else { "-dirty" };
    Some(format!("{hash}{dirty} {date}"))
}

/// HEAD and the files the branch's commit is read from (what exists of them: a missing path
/// would make cargo run this script on every build).
fn watched() -> Vec<PathBuf> {
    let mut paths = vec![git_path("HEAD")];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        paths.push(git_path(&branch));
    }
    paths.push(git_path("packed-refs"));
    paths.into_iter().flatten().filter(|p| p.exists()).collect()
}

fn git_path(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(git(&["rev-parse", "--git-path", name])?);
    path.canonicalize().ok().or(Some(path))
}

/// `git ARGS`' output, trimmed, when it succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}
