//! Lock libraries people ship, as lockbench backends: an *adapter* runs the library
//! in a process of its own and speaks a small JSON-lines protocol on stdin/stdout
//! (`docs/adapter-protocol.md`); a TOML manifest ([`manifest`]) says how to start it. Adding a
//! library needs no change to lockbench: `backends = ["lib:redis-py"]` names a built-in
//! manifest (`adapters/redis-py/adapter.toml`), a path names a user's own.
//!
//! Why a process and a protocol rather than a Rust binding per library: the libraries are
//! Java, Go and Python, their failure modes live in their own threads (heartbeats, keep-alive
//! and renewal threads), and a fault must stop or kill those with the client. One process per
//! client is the unit a fault acts on, and a line protocol is what every language speaks
//! (in the spirit of Maelstrom's).
//!
//! - [`protocol`]: the lines, read strictly (a violation names the line and what was expected);
//! - [`process`]: one adapter process, its hello and its requests, bounded in time;
//! - [`backend`]: [`AdapterBackend`], the `Backend` a run drives;
//! - [`serve`]: the adapter side in Rust, for lockbench's own recipes behind the protocol.
#![deny(missing_docs)]

pub mod backend;
pub mod manifest;
pub mod process;
pub mod protocol;
pub mod serve;

pub use backend::{AdapterBackend, AdapterClient};
pub use manifest::{Manifest, is_adapter};
