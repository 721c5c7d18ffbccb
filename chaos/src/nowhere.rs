//! A [`Site`] whose servers never run, on the loopback topology: the unit tests of what a
//! nemesis records before it touches a server (refusals, faults that need hosts).

use crate::site::{Reach, Site};
use lockbench_cluster::{Host, ServerSpec, Topology};
use std::net::Ipv4Addr;

/// No server runs, no host exists, no coordinator address.
pub(crate) struct Nowhere(pub(crate) Topology);

impl Reach for Nowhere {
    fn topology(&self) -> &Topology {
        &self.0
    }

    fn server_host(&self, _spec: &ServerSpec) -> Option<Host> {
        None
    }

    fn coordinator_addr(&self) -> Option<Ipv4Addr> {
        None
    }
}

impl Site for Nowhere {
    fn hosts_are(&self) -> &'static str {
        "nowhere"
    }

    fn client_hosts(&self) -> Vec<Host> {
        Vec::new()
    }

    fn is_running(&self, _name: &str) -> bool {
        false
    }

    fn is_paused(&self, _name: &str) -> bool {
        false
    }

    async fn pause(&self, name: &str, _stop: bool) -> Result<String, String> {
        Err(name.to_string())
    }

    async fn kill(&self, name: &str) -> Result<String, String> {
        Err(name.to_string())
    }

    async fn start(&self, name: &str) -> anyhow::Result<String> {
        anyhow::bail!("{name} runs nowhere")
    }
}
