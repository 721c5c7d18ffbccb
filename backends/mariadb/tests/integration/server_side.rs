//! The servers' side: the statement digests agree with the clients' own count, and the
//! observer names the holder.

use crate::{backend, knobs};
use lockbench_core::{Backend, ClientId, KeyId, LockClient, Outcome};
use lockbench_mariadb::MariaRecipe;

/// Every statement a client sent was counted by the server once, for each recipe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_counters_agree_with_the_clients_count() {
    for recipe in MariaRecipe::ALL {
        let b = backend(recipe, &knobs(&format!("{recipe}-counters"))).await;
        let before = b.server_counters().await.unwrap();
        assert_eq!(before.servers.len(), 2, "{recipe}: both servers read");
        let mut c = b.connect(ClientId(0)).await.unwrap();
        for round in 0..20 {
            let Outcome::Ok(g) = c.acquire(KeyId(round % 3)).await else {
                panic!("{recipe}: acquire")
            };
            assert!(c.renew(&g).await.is_ok());
            assert!(c.release(g).await.is_ok());
        }
        let sent = c.requests_sent().unwrap();
        c.close().await;
        let after = b.server_counters().await.unwrap();
        let counted = after.since(&before).unwrap();
        assert_eq!(sent, 60, "{recipe}: client counted {sent}");
        assert_eq!(
            counted, sent,
            "{recipe}: server counted {counted}, client sent {sent}"
        );
    }
}

/// The observer names the holder by its client id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_observer_names_the_holder() {
    for recipe in MariaRecipe::ALL {
        let b = backend(recipe, &knobs(&format!("{recipe}-observer"))).await;
        lockbench_conformance::observer_names_the_holder(&b).await;
    }
}
