//! [`AnyElector`]: any [`Elector`] behind one type, so the set of election recipes can be
//! open.
//!
//! Why: each system's crate registers its election recipes
//! ([`ElectionRecipe`](crate::recipe::ElectionRecipe)), and the failover coordinator and the
//! candidate worker processes build whichever the scenario names from that list, which needs
//! one type: [`AnyElector`] wraps an `Elector` and [`AnyCandidate`] its `Candidate`, each call
//! going through a vtable and its future through one `Box`, as [`crate::erased`] does for
//! lock backends.
//!
//! What it costs: one allocation and one indirect call per campaign, hold, resign or observe.
//! An election takes a handful of such calls per second, each waiting on the servers for
//! milliseconds at least.

use crate::election::{Candidate, ElectionInfo, Elector, Leader};
use crate::erased::BoxFuture;
use crate::ids::ClientId;
use crate::op::{ErrorKind, Outcome};
use crate::traits::BackendError;
use std::fmt;
use std::future::Future;

/// An elector of any election recipe.
pub struct AnyElector(Box<dyn DynElector>);

impl AnyElector {
    /// Wraps `elector`.
    pub fn new<E: Elector>(elector: E) -> AnyElector {
        AnyElector(Box::new(elector))
    }
}

impl fmt::Debug for AnyElector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AnyElector({})", self.0.info().election)
    }
}

/// A candidate of any election recipe.
pub struct AnyCandidate(Box<dyn DynCandidate>);

impl fmt::Debug for AnyCandidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AnyCandidate")
    }
}

/// The object-safe form of [`Elector`]: its futures boxed, its candidate wrapped.
trait DynElector: Send + Sync + 'static {
    fn info(&self) -> ElectionInfo;
    fn connect(&self, candidate: ClientId) -> BoxFuture<'_, Result<AnyCandidate, BackendError>>;
    fn cleanup(&self) -> BoxFuture<'_, ()>;
}

impl<E: Elector> DynElector for E {
    fn info(&self) -> ElectionInfo {
        Elector::info(self)
    }

    fn connect(&self, candidate: ClientId) -> BoxFuture<'_, Result<AnyCandidate, BackendError>> {
        Box::pin(async move {
            let c = Elector::connect(self, candidate).await?;
            Ok(AnyCandidate(Box::new(c)))
        })
    }

    fn cleanup(&self) -> BoxFuture<'_, ()> {
        Box::pin(Elector::cleanup(self))
    }
}

impl Elector for AnyElector {
    type Candidate = AnyCandidate;

    fn info(&self) -> ElectionInfo {
        self.0.info()
    }

    fn connect(
        &self,
        candidate: ClientId,
    ) -> impl Future<Output = Result<AnyCandidate, BackendError>> + Send {
        self.0.connect(candidate)
    }

    fn cleanup(&self) -> impl Future<Output = ()> + Send {
        self.0.cleanup()
    }
}

/// The object-safe form of [`Candidate`].
trait DynCandidate: Send + Sync + 'static {
    fn campaign(&self) -> BoxFuture<'_, Outcome<Leader>>;
    fn hold<'a>(&'a self, leadership: &'a Leader) -> BoxFuture<'a, ErrorKind>;
    fn resign<'a>(&'a self, leadership: &'a Leader) -> BoxFuture<'a, Outcome<()>>;
    fn observe(&self, known: Option<Leader>) -> BoxFuture<'_, Outcome<Option<Leader>>>;
    fn close(self: Box<Self>) -> BoxFuture<'static, ()>;
}

impl<C: Candidate> DynCandidate for C {
    fn campaign(&self) -> BoxFuture<'_, Outcome<Leader>> {
        Box::pin(Candidate::campaign(self))
    }

    fn hold<'a>(&'a self, leadership: &'a Leader) -> BoxFuture<'a, ErrorKind> {
        Box::pin(Candidate::hold(self, leadership))
    }

    fn resign<'a>(&'a self, leadership: &'a Leader) -> BoxFuture<'a, Outcome<()>> {
        Box::pin(Candidate::resign(self, leadership))
    }

    fn observe(&self, known: Option<Leader>) -> BoxFuture<'_, Outcome<Option<Leader>>> {
        Box::pin(Candidate::observe(self, known))
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(Candidate::close(*self))
    }
}

impl Candidate for AnyCandidate {
    fn campaign(&self) -> impl Future<Output = Outcome<Leader>> + Send {
        self.0.campaign()
    }

    // `async fn`: the boxed future borrows `self` and `leadership` for one lifetime, which
    // the trait's `impl Future` (capturing each separately) cannot name.
    async fn hold(&self, leadership: &Leader) -> ErrorKind {
        self.0.hold(leadership).await
    }

    async fn resign(&self, leadership: &Leader) -> Outcome<()> {
        self.0.resign(leadership).await
    }

    fn observe(
        &self,
        known: Option<Leader>,
    ) -> impl Future<Output = Outcome<Option<Leader>>> + Send {
        self.0.observe(known)
    }

    fn close(self) -> impl Future<Output = ()> + Send {
        self.0.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FencingToken;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    /// Runs a future that needs no runtime (the fakes below answer at once).
    fn now<T>(f: impl Future<Output = T>) -> T {
        match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("the fake answers at once"),
        }
    }

    struct Fake;
    struct FakeCandidate(ClientId);

    impl Elector for Fake {
        type Candidate = FakeCandidate;
        fn info(&self) -> ElectionInfo {
            ElectionInfo {
                election: crate::ElectionKind::of("fake-election"),
                elects_by: "by fiat".into(),
                epoch: "the candidate's id".into(),
                expires_by: "never".into(),
            }
        }
        async fn connect(&self, candidate: ClientId) -> Result<FakeCandidate, BackendError> {
            Ok(FakeCandidate(candidate))
        }
    }

    impl Candidate for FakeCandidate {
        async fn campaign(&self) -> Outcome<Leader> {
            let epoch = FencingToken(u64::from(self.0.0));
            Outcome::Ok(Leader {
                candidate: self.0,
                epoch,
            })
        }
        async fn hold(&self, _: &Leader) -> ErrorKind {
            ErrorKind::SessionExpired
        }
        async fn resign(&self, _: &Leader) -> Outcome<()> {
            Outcome::Ok(())
        }
        async fn observe(&self, known: Option<Leader>) -> Outcome<Option<Leader>> {
            Outcome::Ok(known)
        }
        async fn close(self) {}
    }

    /// Every call reaches the recipe's own elector and candidate, and their answers come back
    /// unchanged.
    #[test]
    fn an_erased_elector_forwards_every_call() {
        let e = AnyElector::new(Fake);
        assert_eq!(format!("{e:?}"), "AnyElector(fake-election)");
        assert_eq!(Elector::info(&e).elects_by, "by fiat");
        let c = now(Elector::connect(&e, ClientId(7))).unwrap();
        let leader = match now(Candidate::campaign(&c)) {
            Outcome::Ok(l) => l,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            (leader.candidate, leader.epoch),
            (ClientId(7), FencingToken(7))
        );
        assert_eq!(now(Candidate::hold(&c, &leader)), ErrorKind::SessionExpired);
        assert!(now(Candidate::resign(&c, &leader)).is_ok());
        assert!(
            matches!(now(Candidate::observe(&c, Some(leader))), Outcome::Ok(Some(l)) if l == leader)
        );
        now(Candidate::close(c));
        now(Elector::cleanup(&e));
    }
}
