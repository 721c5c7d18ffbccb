//! What the hot-path benches run on: a recipe that answers at once, a synthetic history, a
//! worker's probes.

use lockbench_core::traits::BackendError;
use lockbench_core::{
    BackendInfo, ClientId, FencingToken, Grant, KeyId, Nanos, Op, OpF, OpType, Outcome,
};
use lockbench_workloads::clock::ProbeSample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;

/// A recipe that grants at once, to time what the harness adds to a lock call.
pub struct Instant0;

/// Its client: no I/O, a grant is the key.
pub struct InstantClient;

impl lockbench_core::LockClient for InstantClient {
    type Handle = u64;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<u64>> {
        Outcome::Ok(Grant {
            key,
            token: None,
            handle: u64::from(key.0),
        })
    }

    async fn release(&mut self, grant: Grant<u64>) -> Outcome<()> {
        black_box(grant.handle);
        Outcome::Ok(())
    }

    async fn renew(&mut self, _grant: &Grant<u64>) -> Outcome<()> {
        Outcome::Ok(())
    }

    fn requests_sent(&self) -> Option<u64> {
        None
    }

    async fn close(self) {}

    async fn abandon(self) {}
}

impl lockbench_core::Backend for Instant0 {
    type Client = InstantClient;

    fn info(&self) -> BackendInfo {
        BackendInfo {
            backend: lockbench_core::BackendKind::of("instant"),
            waits_by: "never waits".into(),
            fencing: "none".into(),
            knobs: Vec::new(),
        }
    }

    async fn connect(&self, _client: ClientId) -> Result<InstantClient, BackendError> {
        Ok(InstantClient)
    }

    async fn server_counters(&self) -> Result<lockbench_core::ServerCounters, String> {
        Err("no server".into())
    }
}

/// 100k ops: 8 clients taking turns on 4 keys (acquire, write, release, each invoke + ok), with
/// increasing tokens, as per-client buffers concatenated (unordered across clients).
pub fn synthetic_ops(n: usize) -> Vec<Op> {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let clients = 8u32;
    let mut per_client: Vec<Vec<Op>> = vec![Vec::new(); clients as usize];
    let mut t = 0u64;
    let mut token = 0u64;
    let mut produced = 0;
    while produced < n {
        let client = ClientId(rng.random_range(0..clients));
        let key = KeyId(rng.random_range(0..4));
        token += 1;
        let tok = Some(FencingToken(token));
        let buf = &mut per_client[client.0 as usize];
        for (f, tk) in [(OpF::Acquire, tok), (OpF::Write, tok), (OpF::Release, None)] {
            t += rng.random_range(100..10_000);
            buf.push(Op::invoke(Nanos(t), client, f, key));
            t += rng.random_range(100..10_000);
            buf.push(Op::complete(Nanos(t), client, f, key, OpType::Ok, tk, None));
            produced += 2;
        }
    }
    per_client.into_iter().flatten().take(n).collect()
}

/// Ten minutes of a worker's probes, one a second as the coordinator sends them: its clock
/// 250 ms behind and 80 ppm fast, each way's delay 50 us to 2 ms. With worker times to map,
/// drawn over the span.
pub fn probes(rng: &mut ChaCha8Rng) -> (Vec<ProbeSample>, Vec<Nanos>) {
    let worker = |c: u64| Nanos(c + c * 80 / 1_000_000 - 250_000_000);
    let start = 300_000_000u64;
    let samples = (0..600u64)
        .map(|k| {
            let sent = start + k * 1_000_000_000;
            let there = rng.random_range(50_000..2_000_000);
            let back = rng.random_range(50_000..2_000_000);
            ProbeSample {
                sent: Nanos(sent),
                worker: worker(sent + there),
                received: Nanos(sent + there + back),
            }
        })
        .collect();
    let times = (0..1024)
        .map(|_| worker(rng.random_range(start..start + 599_000_000_000)))
        .collect();
    (samples, times)
}
