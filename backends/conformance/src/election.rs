//! The contract every leader-election recipe meets: a graceful resign hands leadership to a
//! waiting candidate quickly, with a higher epoch, and an observer sees both leaders.

use lockbench_core::{Candidate, ClientId, Elector, Leader, Outcome};
use std::time::{Duration, Instant};

/// Budget for any single step; generous, for a loaded 2-core machine. A resign that hands
/// over in milliseconds passes with a wide margin; one that waits out an expiry (seconds)
/// does not, because the expiries these tests use are longer than this.
pub const STEP: Duration = Duration::from_secs(5);

async fn step<T>(what: &str, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(STEP, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: nothing within {STEP:?}"),
    }
}

async fn connect<E: Elector>(e: &E, id: u32) -> E::Candidate {
    match e.connect(ClientId(id)).await {
        Ok(c) => c,
        Err(err) => panic!("{}: connect candidate {id}: {err}", e.info().election),
    }
}

/// Waits until `observer` reports `want`, returning how long it took.
async fn observe_until<C: Candidate>(observer: &C, mut known: Option<Leader>, want: Leader) {
    loop {
        match observer.observe(known).await {
            Outcome::Ok(l) if l == Some(want) => return,
            Outcome::Ok(l) => known = l,
            other => panic!("observe: {other:?}"),
        }
    }
}

/// Candidate 1 leads, candidate 2 campaigns behind it, candidate 1 resigns: candidate 2 must
/// lead within `max_handover` of the resign, with a higher epoch, and a third candidate that
/// only observes must see candidate 1 and then candidate 2. Returns the measured hand-over.
/// `expiry` is the recipe's session timeout / lease TTL: the hand-over must also be well under
/// it, or the resign did nothing and the lease simply ran out.
pub async fn resign_hands_over<E: Elector>(e: &E, expiry: Duration) -> Duration {
    let name = e.info().election;
    let c1 = connect(e, 1).await;
    let c2 = connect(e, 2).await;
    let observer = connect(e, 3).await;
    let l1 = match step("campaign 1", c1.campaign()).await {
        Outcome::Ok(l) => l,
        other => panic!("{name}: candidate 1 campaign: {other:?}"),
    };
    assert_eq!(l1.candidate, ClientId(1), "{name}: {l1:?}");
    step("observe leader 1", observe_until(&observer, None, l1)).await;
    let second = async {
        let r = c2.campaign().await;
        (r, Instant::now())
    };
    let first_resigns = async {
        // Let candidate 2 queue (or start polling) before the resign.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let at = Instant::now();
        let r = c1.resign(&l1).await;
        (r, at)
    };
    let ((r2, granted), (resigned, at)) = step("resign and hand-over", async {
        tokio::join!(second, first_resigns)
    })
    .await;
    assert!(resigned.is_ok(), "{name}: resign: {resigned:?}");
    let l2 = match r2 {
        Outcome::Ok(l) => l,
        other => panic!("{name}: candidate 2 campaign: {other:?}"),
    };
    assert_eq!(l2.candidate, ClientId(2), "{name}: {l2:?}");
    assert!(l2.epoch > l1.epoch, "{name}: epoch {l2:?} after {l1:?}");
    let handover = granted.saturating_duration_since(at);
    assert!(
        handover < expiry / 2,
        "{name}: hand-over took {handover:?}, not under half the expiry {expiry:?}: the resign did not free leadership"
    );
    step("observe leader 2", observe_until(&observer, Some(l1), l2)).await;
    let _ = c2.resign(&l2).await;
    c1.close().await;
    c2.close().await;
    observer.close().await;
    handover
}
