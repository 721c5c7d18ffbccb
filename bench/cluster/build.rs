//! Builds lockbench's clock shim (`shim/clock.c`) into a shared library the crate embeds
//! (`crate::clock`), with the C compiler the Rust toolchain already links with.

use std::path::PathBuf;

fn main() {
    let source = "shim/clock.c";
    println!("cargo:rerun-if-changed={source}");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("liblockbench-clock.so");
    let compiler = cc::Build::new().get_compiler();
    let status = compiler
        .to_command()
        .args([
            "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
        ])
        .arg(&out)
        .arg(source)
        .arg("-ldl")
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {:?}: {e}", compiler.path()));
    assert!(
        status.success(),
        "the C compiler failed on {source}: {status}"
    );
}
