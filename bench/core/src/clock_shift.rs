//! [`ClockShift`]: how far a `clock` fault moves a server's wall clock, forward or back.
//!
//! Why a type of its own: a clock goes back as well as forward, which a [`Duration`] cannot
//! say, and scenarios write it the way people do (`"+30s"`, `"-2s"`, `"1m"` forward), so it
//! reads and prints as that text and nothing else.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// A signed shift of a wall clock, in nanoseconds (positive: forward).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClockShift(i64);

impl ClockShift {
    /// Forward by `by`.
    pub fn forward(by: Duration) -> ClockShift {
        ClockShift(i64::try_from(by.as_nanos()).unwrap_or(i64::MAX))
    }

    /// Back by `by`.
    pub fn back(by: Duration) -> ClockShift {
        ClockShift(-ClockShift::forward(by).0)
    }

    /// The shift in nanoseconds (negative: back).
    pub fn nanos(self) -> i64 {
        self.0
    }

    /// How far, whichever the way.
    pub fn magnitude(self) -> Duration {
        Duration::from_nanos(self.0.unsigned_abs())
    }

    /// Reads `+30s`, `-2s 500ms`, `1m` (forward without a sign).
    pub fn parse(text: &str) -> Result<ClockShift, String> {
        let t = text.trim();
        let (back, rest) = match t.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, t.strip_prefix('+').unwrap_or(t)),
        };
        let by = humantime::parse_duration(rest.trim()).map_err(|e| {
            format!("clock shift {text:?}: {e}; write a duration with an optional sign, as \"+30s\" or \"-2s\"")
        })?;
        if by.is_zero() {
            return Err(format!(
                "clock shift {text:?} moves nothing; write how far, as \"+30s\" or \"-2s\""
            ));
        }
        Ok(if back {
            ClockShift::back(by)
        } else {
            ClockShift::forward(by)
        })
    }
}

impl fmt::Display for ClockShift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { '-' } else { '+' };
        write!(f, "{sign}{}", humantime::format_duration(self.magnitude()))
    }
}

impl Serialize for ClockShift {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ClockShift {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ClockShift, D::Error> {
        let text = String::deserialize(d)?;
        ClockShift::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shift_reads_with_or_without_its_sign_and_prints_with_it() {
        assert_eq!(ClockShift::parse("+30s").unwrap().nanos(), 30_000_000_000);
        assert_eq!(
            ClockShift::parse("30s").unwrap(),
            ClockShift::parse("+30s").unwrap()
        );
        let back = ClockShift::parse("-2s 500ms").unwrap();
        assert_eq!(back.nanos(), -2_500_000_000);
        assert_eq!(back.to_string(), "-2s 500ms");
        assert_eq!(ClockShift::parse("1m").unwrap().to_string(), "+1m");
    }

    #[test]
    fn no_shift_and_no_duration_are_refused_with_the_way_to_write_one() {
        let zero = ClockShift::parse("0s").unwrap_err();
        assert!(zero.contains("moves nothing"), "{zero}");
        let junk = ClockShift::parse("soon").unwrap_err();
        assert!(junk.contains("\"+30s\""), "{junk}");
    }
}
