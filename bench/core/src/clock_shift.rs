//! How a `clock` fault moves a server's wall clock: [`ClockShift`], a jump forward or back,
//! and [`ClockDrift`], a clock running fast or slow.
//!
//! Why types of their own: a clock goes back as well as forward, which a [`Duration`] cannot
//! say, and scenarios write both the way people do (`"+30s"`, `"-2s"`, `"1m"` forward;
//! `"+10%"`, `"-500ppm"`), so each reads and prints as that text and nothing else.

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

/// A rate at which a wall clock gains (positive) or loses time, in parts per million of
/// true time: `+10%` gains 100 ms a second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClockDrift(i64);

impl ClockDrift {
    /// The rate in parts per million (negative: the clock loses time).
    pub fn ppm(self) -> i64 {
        self.0
    }

    /// Reads `+10%`, `-0.5%`, `+200ppm` (gaining without a sign). A clock cannot lose all of
    /// its time or more (`-100%`), which would stop or reverse it.
    pub fn parse(text: &str) -> Result<ClockDrift, String> {
        let t = text.trim();
        let how = "write a rate with an optional sign, as \"+10%\" or \"-500ppm\"";
        let (number, scale) = if let Some(n) = t.strip_suffix('%') {
            (n, 10_000.0)
        } else if let Some(n) = t.strip_suffix("ppm") {
            (n, 1.0)
        } else {
            return Err(format!("clock drift {text:?}: no unit; {how}"));
        };
        let value: f64 = number
            .trim()
            .parse()
            .map_err(|_| format!("clock drift {text:?}: not a number; {how}"))?;
        let ppm = (value * scale).round();
        if ppm == 0.0 || !ppm.is_finite() {
            return Err(format!("clock drift {text:?} moves nothing; {how}"));
        }
        if ppm <= -1_000_000.0 || ppm > 1e12 {
            return Err(format!(
                "clock drift {text:?}: a clock losing all its time or more would stop or run \
                 backwards; {how}"
            ));
        }
        Ok(ClockDrift(ppm as i64))
    }
}

impl fmt::Display for ClockDrift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { '-' } else { '+' };
        let abs = self.0.unsigned_abs();
        if abs.is_multiple_of(100) {
            let pct = abs as f64 / 10_000.0;
            write!(f, "{sign}{pct}%")
        } else {
            write!(f, "{sign}{abs}ppm")
        }
    }
}

impl Serialize for ClockDrift {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ClockDrift {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ClockDrift, D::Error> {
        let text = String::deserialize(d)?;
        ClockDrift::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drift_reads_as_a_share_or_in_ppm_and_prints_back_the_same() {
        assert_eq!(ClockDrift::parse("+10%").unwrap().ppm(), 100_000);
        assert_eq!(ClockDrift::parse("-0.5%").unwrap().ppm(), -5_000);
        assert_eq!(ClockDrift::parse("250ppm").unwrap().ppm(), 250);
        for text in ["+10%", "-0.5%", "+250ppm", "-1234ppm"] {
            assert_eq!(ClockDrift::parse(text).unwrap().to_string(), text);
        }
        for bad in ["10", "0%", "-100%", "fast%"] {
            assert!(ClockDrift::parse(bad).is_err(), "{bad}");
        }
    }

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
