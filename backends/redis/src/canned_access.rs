//! A [`ServerAccess`] that answers from recorded replies and keeps what it was asked: the
//! tests of the faults this crate offers read their requests and replies without a server.

use lockbench_core::{Login, Pending, ServerAccess, ServerSpec};
use std::net::SocketAddr;
use std::sync::Mutex;

/// Answers every request to a server with `reply(server name, request)`, on the loopback
/// topology's addresses.
pub(crate) struct CannedAccess {
    reply: fn(&str, &[u8]) -> Result<Vec<u8>, String>,
    /// Every request: the server's name, the request as text, the login.
    pub(crate) asked: Mutex<Vec<(&'static str, String, Login)>>,
}

impl CannedAccess {
    pub(crate) fn new(reply: fn(&str, &[u8]) -> Result<Vec<u8>, String>) -> CannedAccess {
        CannedAccess {
            reply,
            asked: Mutex::default(),
        }
    }
}

impl ServerAccess for CannedAccess {
    fn endpoint(&self, spec: &ServerSpec) -> String {
        self.client_addr(spec).to_string()
    }

    fn client_addr(&self, spec: &ServerSpec) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], spec.client_port))
    }

    fn ask<'a>(
        &'a self,
        spec: &'static ServerSpec,
        request: Vec<u8>,
        complete: fn(&[u8]) -> bool,
        login: Login,
    ) -> Pending<'a, Result<Vec<u8>, String>> {
        let text = String::from_utf8_lossy(&request).into_owned();
        self.asked.lock().unwrap().push((spec.name, text, login));
        let reply = (self.reply)(spec.name, &request);
        if let Ok(r) = &reply {
            assert!(complete(r), "{} would wait for more of {r:?}", spec.name);
        }
        Box::pin(async move { reply })
    }
}
