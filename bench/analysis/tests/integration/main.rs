//! lockbench-analysis's integration tests, one test binary: `stream_vs_memory` (the streamed
//! and the in-memory pass agree on real and hand-written history files) and `cut_off` (a
//! history cut off mid-run is judged up to its horizon, without false violations).

mod cut_off;
mod stream_vs_memory;

use lockbench_core::Scenario;
use lockbench_core::scenario::Workload;

/// A workload of `clients` clients on 2 keys, `read_fraction` of them shared acquires.
pub fn workload(clients: u32, read_fraction: f64) -> Workload {
    let text = format!(
        "name = \"t\"\nbackends = [\"redis-setnx\"]\n[workload]\nclients = {clients}\nkeys = 2\nread_fraction = {read_fraction}\n"
    );
    Scenario::load("test", &text, &[]).unwrap().workload
}
