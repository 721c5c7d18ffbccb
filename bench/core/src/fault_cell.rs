//! What results charge a figure to: a kind of fault window, or the time outside every window.
//!
//! Scorecard cells, the truth checker's windows, chart labels and `expect.safe_in` all name
//! fault windows by the same cell (`pause`, `pause-client`, `none`). The cell is derived from
//! a window's [`FaultKind`] and its targets, and compared as a value: only [`Display`] and
//! [`FromStr`] (and serde through them) know its text, which is the text results always held.
//!
//! [`Display`]: std::fmt::Display

use crate::fault_kind::FaultKind;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// The text appended to a kind whose window targeted client hosts only.
const CLIENT_SUFFIX: &str = "-client";
/// The text of [`FaultCell::NoFault`].
const NO_FAULT: &str = "none";

/// A kind of fault window as results name it: the fault, and whether it hit only client
/// hosts (`pause-client`: a worker process stopped, e.g. the fencing workload's holder), so it
/// never reads like the same fault on a server (`pause`: a server stopped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultCell {
    /// A window of this kind on servers (or on servers and clients together).
    Servers(FaultKind),
    /// A window of this kind whose every target is a client host.
    Clients(FaultKind),
    /// The time outside every fault window.
    #[default]
    NoFault,
}

impl FaultCell {
    /// The cell of a window of `kind` on `targets` (resolved host names).
    pub fn of(kind: FaultKind, targets: &[String]) -> FaultCell {
        if !targets.is_empty() && targets.iter().all(|t| t.starts_with("client")) {
            FaultCell::Clients(kind)
        } else {
            FaultCell::Servers(kind)
        }
    }

    /// The fault kind of the window, `None` outside every window.
    pub fn kind(self) -> Option<FaultKind> {
        match self {
            FaultCell::Servers(kind) | FaultCell::Clients(kind) => Some(kind),
            FaultCell::NoFault => None,
        }
    }
}

impl fmt::Display for FaultCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultCell::Servers(kind) => f.write_str(kind.name()),
            FaultCell::Clients(kind) => write!(f, "{}{CLIENT_SUFFIX}", kind.name()),
            FaultCell::NoFault => f.write_str(NO_FAULT),
        }
    }
}

impl FromStr for FaultCell {
    type Err = String;

    fn from_str(text: &str) -> Result<FaultCell, String> {
        let kind = |name: &str| FaultKind::ALL.into_iter().find(|k| k.name() == name);
        if text == NO_FAULT {
            return Ok(FaultCell::NoFault);
        }
        if let Some(kind) = kind(text) {
            return Ok(FaultCell::Servers(kind));
        }
        if let Some(kind) = text.strip_suffix(CLIENT_SUFFIX).and_then(kind) {
            return Ok(FaultCell::Clients(kind));
        }
        let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
        Err(format!(
            "`{text}` is no fault cell: a fault kind ({}), the kind with `{CLIENT_SUFFIX}` \
             for client hosts only, or `{NO_FAULT}`",
            names.join(", ")
        ))
    }
}

impl Serialize for FaultCell {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FaultCell {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FaultCell, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A fault window's label for charts: its [`FaultCell`] and its targets (`pause zk3`,
/// `pause-client client1`).
pub fn fault_label(kind: FaultKind, targets: &[String]) -> String {
    let cell = FaultCell::of(kind, targets);
    if targets.is_empty() {
        cell.to_string()
    } else {
        format!("{cell} {}", targets.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_and_server_faults_have_different_cells_and_labels() {
        let c = vec!["client1".to_string()];
        let s = vec!["zk3".to_string()];
        assert_eq!(
            FaultCell::of(FaultKind::Pause, &c).to_string(),
            "pause-client"
        );
        assert_eq!(FaultCell::of(FaultKind::Pause, &s).to_string(), "pause");
        assert_eq!(fault_label(FaultKind::Pause, &c), "pause-client client1");
        assert_eq!(fault_label(FaultKind::Pause, &s), "pause zk3");
        assert_eq!(fault_label(FaultKind::Heal, &[]), "heal");
    }

    /// Every cell serializes to the text results always held, and reads back.
    #[test]
    fn every_cell_round_trips_as_its_text() {
        let mut cells = vec![FaultCell::NoFault];
        for kind in FaultKind::ALL {
            cells.push(FaultCell::Servers(kind));
            cells.push(FaultCell::Clients(kind));
        }
        for cell in cells {
            let text = serde_json::to_string(&cell).unwrap();
            let expected = match cell {
                FaultCell::Servers(k) => format!("\"{}\"", k.name()),
                FaultCell::Clients(k) => format!("\"{}-client\"", k.name()),
                FaultCell::NoFault => "\"none\"".to_string(),
            };
            assert_eq!(text, expected);
            assert_eq!(serde_json::from_str::<FaultCell>(&text).unwrap(), cell);
        }
        assert!("pausee".parse::<FaultCell>().unwrap_err().contains("pause"));
    }
}
