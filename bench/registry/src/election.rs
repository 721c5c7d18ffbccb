//! The election recipes' constructor table.

/// Binds `$e` to the elector of `$kind` (built from `$scenario`'s knobs, `$endpoints` and the
/// candidate's `$name`) and evaluates `$body`, generic over its type.
///
/// Adding a recipe: an `ElectionKind` variant, one arm here, one in
/// [`crate::election_group_of`].
#[macro_export]
macro_rules! with_elector {
    ($kind:expr, $scenario:expr, $endpoints:expr, $name:expr, |$e:ident| $body:expr) => {{
        let scenario: &$crate::core::Scenario = $scenario;
        let endpoints: &$crate::core::Endpoints = $endpoints;
        let name: &str = $name;
        match $kind {
            $crate::core::ElectionKind::ZkElection => {
                let $e = $crate::zookeeper::ZkElection::new(
                    endpoints,
                    &$crate::knobs::<$crate::zookeeper::ZookeeperKnobs>(scenario)?,
                    name,
                )?;
                $body
            }
            $crate::core::ElectionKind::EtcdElection => {
                let $e = $crate::etcd::EtcdElection::new(
                    endpoints,
                    &$crate::knobs::<$crate::etcd::EtcdKnobs>(scenario)?,
                    name,
                )?;
                $body
            }
            $crate::core::ElectionKind::EtcdLeaseElection => {
                let $e = $crate::etcd::EtcdLeaseElection::new(
                    endpoints,
                    &$crate::knobs::<$crate::etcd::EtcdKnobs>(scenario)?,
                    name,
                )?;
                $body
            }
            $crate::core::ElectionKind::RedisLeaseElection => {
                let $e = $crate::redis::RedisLeaseElection::new(
                    endpoints,
                    &$crate::knobs::<$crate::redis::RedisKnobs>(scenario)?,
                    scenario.failover.poll,
                    name,
                )?;
                $body
            }
        }
    }};
}
