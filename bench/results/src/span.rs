//! Spans of time in words, precise enough that a positive span never reads as zero.
//!
//! Overlap figures are milliseconds in `results.json`, but an overlap can last microseconds: with
//! `hold = "0ms"` a client believes it holds a key only from its grant to its release call (one
//! write to the resource), so two grants of a broken recipe (a Redlock quorum of 2 of 5, whose two
//! concurrent rounds can both win) overlap for a few µs. Printed as `{:.1} ms`, five such episodes
//! read "0.0 ms with two holders, longest 0.0 ms" next to "5 overlaps". [`of_ms`] switches to µs
//! below a millisecond instead.

/// `ms` milliseconds in words: `"120 ms"`, `"3.4 ms"`, `"25 µs"`, `"2.5 µs"`, `"under 0.1 µs"`,
/// and `"0 ms"` only for nothing at all.
pub fn of_ms(ms: f64) -> String {
    let us = ms * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{ms:.1} ms")
    } else if us >= 10.0 {
        format!("{us:.0} µs")
    } else if us >= 0.1 {
        format!("{us:.1} µs")
    } else if ms > 0.0 {
        "under 0.1 µs".into()
    } else {
        "0 ms".into()
    }
}

#[cfg(test)]
mod tests {
    use super::of_ms;

    #[test]
    fn a_positive_span_never_reads_as_zero() {
        assert_eq!(of_ms(250.0), "250 ms");
        assert_eq!(of_ms(3.04), "3.0 ms");
        assert_eq!(of_ms(0.025), "25 µs");
        assert_eq!(of_ms(0.0025), "2.5 µs");
        assert_eq!(of_ms(0.000_01), "under 0.1 µs");
        assert_eq!(of_ms(0.0), "0 ms");
    }
}
