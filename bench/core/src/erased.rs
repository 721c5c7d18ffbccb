//! [`AnyBackend`]: any [`Backend`] behind one type, so the set of recipes can be open.
//!
//! Why: each system's crate registers its recipes ([`Recipe`](crate::recipe::Recipe)), and the
//! runner, the worker processes, `lockbench scale` and the benches build whichever the scenario
//! names from that list. A list of recipes of different types needs one type: [`AnyBackend`]
//! wraps a `Backend` and [`AnyClient`] its `LockClient`, each call going through a vtable and
//! its future through one `Box`. The alternative, a constructor macro expanding the caller's
//! body once per recipe (an earlier design), keeps the client loop
//! monomorphised but makes every new recipe an edit of the central table, and cannot hold a
//! recipe that is only known at run time (an adapter named in a manifest).
//!
//! What it costs: one allocation and one indirect call per lock call, plus one allocation per
//! grant (the recipe's handle travels boxed).
//! `cargo bench -p lockbench --bench hot_paths -- lock_call` times it against the same recipe
//! called directly, on a recipe that answers at once; it must stay far below the tens of
//! microseconds a lock call takes on the loopback network at the very fastest.

use crate::fanout::{ServerFanout, Wakeups};
use crate::ids::{ClientId, KeyId};
use crate::op::Outcome;
use crate::server_view::ServerSink;
use crate::time::RunClock;
use crate::traits::{Backend, BackendError, BackendInfo, Grant, LockClient, ServerCounters};
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// A boxed future: what a call through a vtable returns.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A backend of any recipe.
pub struct AnyBackend(Box<dyn DynBackend>);

impl AnyBackend {
    /// Wraps `backend`.
    pub fn new<B: Backend>(backend: B) -> AnyBackend {
        AnyBackend(Box::new(backend))
    }
}

impl fmt::Debug for AnyBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AnyBackend({})", self.0.info().backend)
    }
}

/// A client of any recipe.
pub struct AnyClient(Box<dyn DynClient>);

/// A held lock of any recipe: the recipe's own [`Grant`], boxed.
pub struct AnyHandle(
    Box<dyn Any + Send + Sync>,
    fn(&(dyn Any + Send + Sync)) -> String,
);

impl fmt::Debug for AnyHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&(self.1)(self.0.as_ref()))
    }
}

/// The object-safe form of [`Backend`]: its futures boxed, its client wrapped.
trait DynBackend: Send + Sync + 'static {
    fn info(&self) -> BackendInfo;
    fn connect(&self, client: ClientId) -> BoxFuture<'_, Result<AnyClient, BackendError>>;
    fn check_servers(&self) -> BoxFuture<'_, Result<(), BackendError>>;
    fn start_time(&self) -> std::time::Duration;
    fn server_counters(&self) -> BoxFuture<'_, Result<ServerCounters, String>>;
    fn wakeups(&self) -> Option<Wakeups>;
    fn broken(&self) -> Option<String>;
    fn server_fanout(&self) -> BoxFuture<'_, Result<Option<ServerFanout>, String>>;
    fn observe_server(
        &self,
        clock: RunClock,
        keys: u32,
        sink: ServerSink,
    ) -> BoxFuture<'_, Result<(), String>>;
}

impl<B: Backend> DynBackend for B {
    fn info(&self) -> BackendInfo {
        Backend::info(self)
    }

    fn connect(&self, client: ClientId) -> BoxFuture<'_, Result<AnyClient, BackendError>> {
        Box::pin(async move {
            let c = Backend::connect(self, client).await?;
            Ok(AnyClient(Box::new(c)))
        })
    }

    fn check_servers(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(Backend::check_servers(self))
    }

    fn start_time(&self) -> std::time::Duration {
        Backend::start_time(self)
    }

    fn server_counters(&self) -> BoxFuture<'_, Result<ServerCounters, String>> {
        Box::pin(Backend::server_counters(self))
    }

    fn wakeups(&self) -> Option<Wakeups> {
        Backend::wakeups(self)
    }

    fn broken(&self) -> Option<String> {
        Backend::broken(self)
    }

    fn server_fanout(&self) -> BoxFuture<'_, Result<Option<ServerFanout>, String>> {
        Box::pin(Backend::server_fanout(self))
    }

    fn observe_server(
        &self,
        clock: RunClock,
        keys: u32,
        sink: ServerSink,
    ) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(Backend::observe_server(self, clock, keys, sink))
    }
}

impl Backend for AnyBackend {
    type Client = AnyClient;

    fn info(&self) -> BackendInfo {
        self.0.info()
    }

    fn connect(&self, client: ClientId) -> impl Future<Output = Result<AnyClient, BackendError>> {
        self.0.connect(client)
    }

    fn check_servers(&self) -> impl Future<Output = Result<(), BackendError>> + Send {
        self.0.check_servers()
    }

    fn start_time(&self) -> std::time::Duration {
        self.0.start_time()
    }

    fn server_counters(&self) -> impl Future<Output = Result<ServerCounters, String>> + Send {
        self.0.server_counters()
    }

    fn wakeups(&self) -> Option<Wakeups> {
        self.0.wakeups()
    }

    fn broken(&self) -> Option<String> {
        self.0.broken()
    }

    fn server_fanout(&self) -> impl Future<Output = Result<Option<ServerFanout>, String>> + Send {
        self.0.server_fanout()
    }

    fn observe_server(
        &self,
        clock: RunClock,
        keys: u32,
        sink: ServerSink,
    ) -> impl Future<Output = Result<(), String>> + Send {
        self.0.observe_server(clock, keys, sink)
    }
}

/// The object-safe form of [`LockClient`].
trait DynClient: Send + 'static {
    fn acquire(&mut self, key: KeyId) -> BoxFuture<'_, Outcome<Grant<AnyHandle>>>;
    fn acquire_shared(&mut self, key: KeyId) -> BoxFuture<'_, Outcome<Grant<AnyHandle>>>;
    fn release(&mut self, grant: Grant<AnyHandle>) -> BoxFuture<'_, Outcome<()>>;
    fn renew<'a>(&'a mut self, grant: &'a Grant<AnyHandle>) -> BoxFuture<'a, Outcome<()>>;
    fn requests_sent(&self) -> Option<u64>;
    fn close(self: Box<Self>) -> BoxFuture<'static, ()>;
    fn abandon(self: Box<Self>) -> BoxFuture<'static, ()>;
    fn shared_mode(&self) -> bool;
}

/// Boxes a recipe's grant, keeping its key and token outside for the client loop.
fn wrap<H>(outcome: Outcome<Grant<H>>) -> Outcome<Grant<AnyHandle>>
where
    H: Send + Sync + fmt::Debug + 'static,
{
    match outcome {
        Outcome::Ok(g) => Outcome::Ok(Grant {
            key: g.key,
            token: g.token,
            handle: AnyHandle(Box::new(g), |any| match any.downcast_ref::<Grant<H>>() {
                Some(g) => format!("{:?}", g.handle),
                None => "?".to_string(),
            }),
        }),
        Outcome::Fail(e) => Outcome::Fail(e),
        Outcome::Info(e) => Outcome::Info(e),
    }
}

/// The recipe's own grant back from a wrapped one. A grant goes back to the client that made
/// it (the client loop never mixes clients), so another type is a bug in the caller.
fn unwrap_ref<H: 'static>(grant: &Grant<AnyHandle>) -> &Grant<H> {
    grant
        .handle
        .0
        .downcast_ref::<Grant<H>>()
        .expect("a grant is released or renewed by the client that made it")
}

impl<C: LockClient> DynClient for C {
    fn acquire(&mut self, key: KeyId) -> BoxFuture<'_, Outcome<Grant<AnyHandle>>> {
        Box::pin(async move { wrap(LockClient::acquire(self, key).await) })
    }

    fn acquire_shared(&mut self, key: KeyId) -> BoxFuture<'_, Outcome<Grant<AnyHandle>>> {
        Box::pin(async move { wrap(LockClient::acquire_shared(self, key).await) })
    }

    fn release(&mut self, grant: Grant<AnyHandle>) -> BoxFuture<'_, Outcome<()>> {
        let inner = grant
            .handle
            .0
            .downcast::<Grant<C::Handle>>()
            .expect("a grant is released by the client that made it");
        Box::pin(LockClient::release(self, *inner))
    }

    fn renew<'a>(&'a mut self, grant: &'a Grant<AnyHandle>) -> BoxFuture<'a, Outcome<()>> {
        Box::pin(LockClient::renew(self, unwrap_ref::<C::Handle>(grant)))
    }

    fn requests_sent(&self) -> Option<u64> {
        LockClient::requests_sent(self)
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(LockClient::close(*self))
    }

    fn abandon(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(LockClient::abandon(*self))
    }

    fn shared_mode(&self) -> bool {
        LockClient::shared_mode(self)
    }
}

impl LockClient for AnyClient {
    type Handle = AnyHandle;

    fn acquire(&mut self, key: KeyId) -> impl Future<Output = Outcome<Grant<AnyHandle>>> + Send {
        self.0.acquire(key)
    }

    fn release(&mut self, grant: Grant<AnyHandle>) -> impl Future<Output = Outcome<()>> + Send {
        self.0.release(grant)
    }

    async fn renew(&mut self, grant: &Grant<AnyHandle>) -> Outcome<()> {
        self.0.renew(grant).await
    }

    fn requests_sent(&self) -> Option<u64> {
        self.0.requests_sent()
    }

    fn close(self) -> impl Future<Output = ()> + Send {
        self.0.close()
    }

    fn abandon(self) -> impl Future<Output = ()> + Send {
        self.0.abandon()
    }

    fn acquire_shared(
        &mut self,
        key: KeyId,
    ) -> impl Future<Output = Outcome<Grant<AnyHandle>>> + Send {
        self.0.acquire_shared(key)
    }

    fn shared_mode(&self) -> bool {
        self.0.shared_mode()
    }
}
