//! Typed outcomes. `results.json` spells them as lowercase words (`"ok"`, `"invalid"`), and
//! they stay words there; in code they are enums, so a typo is a compile error rather than a
//! branch that is never taken.

use serde::{Deserialize, Serialize};

/// A checker's verdict (re-exported from `lockbench-analysis`, where the checkers give it):
/// `valid`, `unknown` or `invalid`, ordered so that merging verdicts is `max`.
pub use lockbench_analysis::Validity;

/// How one backend's run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// It ran to the end of its measured window.
    Ok,
    /// Ctrl-C (or SIGTERM/SIGHUP) cut it short; its figures cover what ran.
    Interrupted,
    /// It could not run (see the result's `error`).
    Error,
}

impl Status {
    /// The word `results.json` uses.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Interrupted => "interrupted",
            Status::Error => "error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_the_schema_words() {
        for (s, w) in [
            (Status::Ok, "ok"),
            (Status::Interrupted, "interrupted"),
            (Status::Error, "error"),
        ] {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{w}\""));
            assert_eq!(s.name(), w);
            assert_eq!(
                serde_json::from_str::<Status>(&format!("\"{w}\"")).unwrap(),
                s
            );
        }
        for (v, w) in [
            (Validity::Valid, "valid"),
            (Validity::Unknown, "unknown"),
            (Validity::Invalid, "invalid"),
        ] {
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{w}\""));
            assert_eq!(v.name(), w);
            assert_eq!(
                serde_json::from_str::<Validity>(&format!("\"{w}\"")).unwrap(),
                v
            );
        }
    }
}
