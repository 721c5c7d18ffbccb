//! [`LinkProxies`]: one [`LinkProxy`] per (client, server) link of a run, and the clients'
//! endpoints rewritten to go through them.
//!
//! Why per client: a link fault is "between a client (or all clients) and a server". The
//! in-process client slots share one backend in the coordinator, so they are one client,
//! named [`crate::grudge::COORDINATOR`]; each worker process (`client1`, ...) is another.
//! Each client gets its own proxy to each server, so a fault can slow `client1 -> redis`
//! while the other clients' links stay clean.
//!
//! The proxies run in the coordinator process and listen on the address the resource service
//! uses (the bridge address in the `netns` topology, which every client host reaches;
//! loopback otherwise), so link faults work in both topologies. Caveat: a proxied worker's
//! traffic to the servers leaves from the coordinator, so a partition that isolates a
//! *client host* no longer cuts that client's server links (the coordinator warns when a
//! schedule mixes the two).

use crate::LinkProxy;
use lockbench_cluster::{Cluster, Group, ServerSpec};
use lockbench_core::Endpoints;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The `host:port` of an endpoint (`http://10.77.0.21:2379` -> `10.77.0.21:2379`).
fn host_port(endpoint: &str) -> &str {
    let rest = endpoint
        .split_once("://")
        .map(|(_, r)| r)
        .unwrap_or(endpoint);
    rest.split('/').next().unwrap_or(rest)
}

/// The proxies of one run, keyed by (client, server).
#[derive(Debug)]
pub struct LinkProxies {
    bind: IpAddr,
    /// (server name, endpoint as clients write it), in server order.
    servers: Vec<(String, String)>,
    proxies: BTreeMap<(String, String), LinkProxy>,
}

impl LinkProxies {
    /// Proxies listening on `bind` for the servers `servers` (name, endpoint as the clients
    /// write it). Nothing is started until [`LinkProxies::endpoints_for`] asks for a client's.
    pub fn new(bind: IpAddr, servers: Vec<(String, String)>) -> LinkProxies {
        LinkProxies {
            bind,
            servers,
            proxies: BTreeMap::new(),
        }
    }

    /// Proxies for the managed cluster's servers of `group`, named like the servers (`zk1`,
    /// `redis`, `redlock3`).
    pub fn for_cluster(cluster: &Cluster, group: Group, bind: IpAddr) -> LinkProxies {
        let topo = cluster.topology();
        let servers = cluster
            .servers()
            .into_iter()
            .filter(|s: &&ServerSpec| s.group == group)
            .map(|s| (s.name.to_string(), topo.endpoint(s)))
            .collect();
        LinkProxies::new(bind, servers)
    }

    /// `endpoints` as client `client` must use them: every endpoint of a proxied server
    /// replaced by that client's proxy to it (started now if it is not running yet).
    pub async fn endpoints_for(
        &mut self,
        client: &str,
        endpoints: &Endpoints,
    ) -> anyhow::Result<Endpoints> {
        let mut out = endpoints.clone();
        for (server, endpoint) in self.servers.clone() {
            // Compared by address: a secure cluster's clients write `https://` where the
            // topology says `http://`, and it is the address the proxy stands in for.
            let addr = host_port(&endpoint);
            let listed = endpoints
                .iter()
                .any(|(_, list)| list.iter().any(|e| host_port(e) == addr));
            if !listed {
                // Clients never dial it (e.g. the failover pair, found through Sentinel): a
                // proxy would carry nothing, and a fault on it would claim an effect it has not.
                continue;
            }
            let key = (client.to_string(), server.clone());
            if !self.proxies.contains_key(&key) {
                let name = format!("{client}->{server}");
                let proxy = LinkProxy::start(&name, self.bind, host_port(&endpoint)).await?;
                self.proxies.insert(key.clone(), proxy);
            }
            let via = self.proxies[&key].addr().to_string();
            for list in out.lists_mut() {
                for e in list.iter_mut() {
                    if host_port(e) == addr {
                        *e = e.replacen(addr, &via, 1);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The proxied servers' names, in server order.
    pub fn server_names(&self) -> Vec<String> {
        self.servers.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The clients that have proxies.
    pub fn client_names(&self) -> Vec<String> {
        let mut c: Vec<String> = self.proxies.keys().map(|(c, _)| c.clone()).collect();
        c.dedup();
        c
    }

    /// The proxy of the link `client -> server`.
    pub fn get(&self, client: &str, server: &str) -> Option<&LinkProxy> {
        self.proxies.get(&(client.to_string(), server.to_string()))
    }

    /// Every proxy.
    pub fn all(&self) -> impl Iterator<Item = &LinkProxy> {
        self.proxies.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_strips_the_scheme_and_path() {
        assert_eq!(host_port("http://10.77.0.21:2379"), "10.77.0.21:2379");
        assert_eq!(host_port("127.0.0.1:16379"), "127.0.0.1:16379");
        assert_eq!(host_port("https://h:1/x"), "h:1");
    }

    /// A secure cluster's clients write `https://` where the topology says `http://`: the
    /// proxy stands in for the address, so they get it too (their link faults apply).
    #[tokio::test]
    async fn an_https_endpoint_of_a_proxied_server_is_rewritten() {
        let mut p = LinkProxies::new(
            "127.0.0.1".parse().unwrap(),
            vec![("etcd1".into(), "http://127.0.0.1:12379".into())],
        );
        let e = Endpoints::from_iter([("etcd", vec!["https://127.0.0.1:12379".into()])]);
        let a = p.endpoints_for("client1", &e).await.unwrap();
        let via = p.get("client1", "etcd1").expect("a proxy for etcd1").addr();
        assert_eq!(a.get("etcd")[0], format!("https://{via}"));
    }

    #[tokio::test]
    async fn endpoints_are_rewritten_per_client() {
        let mut p = LinkProxies::new(
            "127.0.0.1".parse().unwrap(),
            vec![
                ("etcd1".into(), "http://127.0.0.1:12379".into()),
                ("etcd2".into(), "http://127.0.0.1:12381".into()),
            ],
        );
        let e = Endpoints::from_iter([
            (
                "etcd",
                vec![
                    "http://127.0.0.1:12379".into(),
                    "http://127.0.0.1:12381".into(),
                ],
            ),
            ("redis", vec!["127.0.0.1:16379".into()]),
        ]);
        let a = p.endpoints_for("coordinator", &e).await.unwrap();
        let b = p.endpoints_for("client1", &e).await.unwrap();
        let via = p.get("coordinator", "etcd1").unwrap().addr();
        assert_eq!(a.get("etcd")[0], format!("http://{via}"));
        assert_ne!(
            a.get("etcd"),
            b.get("etcd"),
            "each client has its own proxies"
        );
        assert_eq!(
            a.get("redis"),
            e.get("redis"),
            "unproxied systems are untouched"
        );
        assert_eq!(p.client_names(), vec!["client1", "coordinator"]);
    }

    #[tokio::test]
    async fn servers_no_client_dials_get_no_proxy() {
        let mut p = LinkProxies::new(
            "127.0.0.1".parse().unwrap(),
            vec![("fo1".into(), "127.0.0.1:16390".into())],
        );
        let e = Endpoints::from_iter([("sentinel", vec!["127.0.0.1:26390".into()])]);
        assert_eq!(p.endpoints_for("coordinator", &e).await.unwrap(), e);
        assert!(p.client_names().is_empty());
    }
}
