//! The lock backends' constructor table.

/// Binds `$b` to the backend of `$kind` (built from `$scenario`'s knobs and `$endpoints`) and
/// evaluates `$body`, which is generic over the backend type: the body is expanded once per
/// recipe, so whatever it runs is monomorphised. A constructor's error returns from the
/// enclosing function with `?`.
///
/// Adding a recipe: a `BackendKind` variant, one arm here, one in [`crate::group_of`].
#[macro_export]
macro_rules! with_backend {
    ($kind:expr, $scenario:expr, $endpoints:expr, |$b:ident| $body:expr) => {{
        let kind: $crate::core::BackendKind = $kind;
        let scenario: &$crate::core::Scenario = $scenario;
        let endpoints: &$crate::core::Endpoints = $endpoints;
        let keys = scenario.workload.keys;
        let seed = scenario.seed;
        match kind {
            $crate::core::BackendKind::ZkFair => {
                let $b = $crate::zookeeper::ZkFair::new(
                    endpoints,
                    &$crate::knobs::<$crate::zookeeper::ZookeeperKnobs>(scenario)?,
                    keys,
                    seed,
                )?;
                $body
            }
            $crate::core::BackendKind::ZkCurator => {
                let $b = $crate::zookeeper::ZkCurator::new(
                    endpoints,
                    &$crate::knobs::<$crate::zookeeper::ZookeeperKnobs>(scenario)?,
                    keys,
                    seed,
                )?;
                $body
            }
            $crate::core::BackendKind::ZkHerd
            | $crate::core::BackendKind::ZkRwlock
            | $crate::core::BackendKind::ZkBrokenRwlock => {
                let queue = $crate::zookeeper::Queue::of(kind).expect("a zookeeper queue");
                let $b = $crate::zookeeper::ZkFair::new(
                    endpoints,
                    &$crate::knobs::<$crate::zookeeper::ZookeeperKnobs>(scenario)?,
                    keys,
                    seed,
                )?
                .with_queue(queue);
                $body
            }
            $crate::core::BackendKind::EtcdLease
            | $crate::core::BackendKind::EtcdLockapi
            | $crate::core::BackendKind::EtcdHerd => {
                let $b = $crate::etcd::EtcdBackend::new(
                    kind,
                    endpoints,
                    &$crate::knobs::<$crate::etcd::EtcdKnobs>(scenario)?,
                    keys,
                    seed,
                )?;
                $body
            }
            $crate::core::BackendKind::RedisSetnx
            | $crate::core::BackendKind::RedisBrokenNoNx
            | $crate::core::BackendKind::RedisBrokenRelease
            | $crate::core::BackendKind::RedisBrokenRenew => {
                let mode = match kind {
                    $crate::core::BackendKind::RedisBrokenNoNx => {
                        $crate::redis::SetMode::BrokenNoNx
                    }
                    $crate::core::BackendKind::RedisBrokenRelease => {
                        $crate::redis::SetMode::BrokenRelease
                    }
                    $crate::core::BackendKind::RedisBrokenRenew => {
                        $crate::redis::SetMode::BrokenRenew
                    }
                    _ => $crate::redis::SetMode::Nx,
                };
                let $b = $crate::redis::SetNxBackend::new(
                    endpoints,
                    &$crate::knobs::<$crate::redis::RedisKnobs>(scenario)?,
                    keys,
                    seed,
                    mode,
                )?;
                $body
            }
            $crate::core::BackendKind::RedisSentinel => {
                let $b = $crate::redis::SetNxBackend::via_sentinel(
                    endpoints,
                    &$crate::knobs::<$crate::redis::RedisKnobs>(scenario)?,
                    keys,
                    seed,
                )?;
                $body
            }
            $crate::core::BackendKind::RedisPubsub => {
                let $b = $crate::redis::SetNxBackend::new(
                    endpoints,
                    &$crate::knobs::<$crate::redis::RedisKnobs>(scenario)?,
                    keys,
                    seed,
                    $crate::redis::SetMode::Nx,
                )?
                .with_pubsub();
                $body
            }
            $crate::core::BackendKind::Redlock => {
                let $b = $crate::redis::RedlockBackend::new(
                    endpoints,
                    &$crate::knobs::<$crate::redis::RedlockKnobs>(scenario)?,
                    keys,
                    seed,
                )?;
                $body
            }
        }
    }};
}
