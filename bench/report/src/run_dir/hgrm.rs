//! HdrHistogram's percentile distribution text (`.hgrm`), byte for byte as Java's
//! `AbstractHistogram.outputPercentileDistribution(out, 5, 1000.0)` prints it, so the files load
//! in HdrHistogram's plotter and in any tool that parses that output.
//!
//! Why not the `hdrhistogram` crate's quantile iterator: it places its last rows differently
//! from Java's `PercentileIterator` (it keeps ticking towards 100% at the maximum, where Java
//! emits one row at the level it reached and then a single 100% row), and it has no total count
//! to the row. So the Java iterator is restated here over the recorded values: start at
//! percentile 0; at each recorded value, while the cumulative percentage has reached the
//! iteration level, emit a row and advance the level by `100 / (ticks * 2^(floor(log2(100 /
//! (100 - level))) + 1))`; once every sample is counted, emit the final row at 100%.
//!
//! Values are recorded in microseconds and printed in milliseconds (scaling ratio 1000, with as
//! many decimals as the histogram's significant digits, so no precision is lost), which is the
//! unit HdrHistogram's plotter labels its axis with.

use hdrhistogram::Histogram;
use std::fmt::Write;

/// Rows per halving of the distance to 100% (Java's `percentileTicksPerHalfDistance`; 5 is what
/// HdrHistogram's own tools print).
const TICKS_PER_HALF_DISTANCE: u32 = 5;
/// Recorded units (µs) per printed unit (ms): Java's `outputValueUnitScalingRatio`.
pub(crate) const SCALING_RATIO: f64 = 1000.0;

/// One row: the value iterated to (highest equivalent, recorded unit), the percentile level
/// iterated to (0..=100) and the number of samples at or below the value.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Row {
    value: u64,
    percentile: f64,
    total: u64,
}

/// Java's `PercentileIterator` over `h`.
fn rows(h: &Histogram<u64>, ticks: u32) -> Vec<Row> {
    let total = h.len();
    let mut out = Vec::new();
    if total == 0 {
        return out;
    }
    let mut level = 0.0f64;
    let mut cumulative = 0u64;
    'values: for v in h.iter_recorded() {
        cumulative += v.count_at_value();
        let value = v.value_iterated_to();
        while 100.0 * cumulative as f64 / total as f64 >= level {
            out.push(Row {
                value,
                percentile: level,
                total: cumulative,
            });
            let halvings = ((100.0 / (100.0 - level)).ln() / 2f64.ln()) as i64;
            let reporting_ticks = i64::from(ticks) * 2f64.powi((halvings + 1) as i32) as i64;
            level += 100.0 / reporting_ticks as f64;
            if cumulative >= total {
                break 'values;
            }
        }
    }
    out.push(Row {
        value: h.max(),
        percentile: 100.0,
        total,
    });
    out
}

/// Java's `subBucketCount`, which the crate keeps private: the power of two at or above
/// `2 * 10^sigfig`.
fn sub_bucket_count(h: &Histogram<u64>) -> u32 {
    let largest = 2.0 * 10f64.powi(i32::from(h.sigfig()));
    1u32 << (largest.log2().ceil() as u32)
}

/// `%.{d}f` as Java's `Formatter` prints it: the shortest decimal digits that identify `x`,
/// rounded half up (C and Rust round the exact binary value instead, so 0.15 gives 0.1 there
/// and 0.2 in Java).
fn java_fixed(x: f64, d: usize) -> String {
    let shortest = format!("{}", x.abs());
    let sign = if x.is_sign_negative() && x != 0.0 {
        "-"
    } else {
        ""
    };
    let (int, frac) = shortest.split_once('.').unwrap_or((&shortest, ""));
    if frac.len() <= d {
        return format!("{sign}{int}.{frac:0<d$}");
    }
    let mut digits: Vec<u8> = int.bytes().chain(frac.bytes().take(d)).collect();
    if frac.as_bytes()[d] >= b'5' {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, b'1');
                break;
            }
            i -= 1;
            if digits[i] == b'9' {
                digits[i] = b'0';
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let (int, frac) = digits.split_at(digits.len() - d);
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    if d == 0 {
        format!("{sign}{}", text(int))
    } else {
        format!("{sign}{}.{}", text(int), text(frac))
    }
}

/// Java's `getMean()` and `getStdDeviation()`: every recorded value's median equivalent, summed
/// and then divided (the crate divides at each step, which can differ in the last digit).
fn mean_and_stdev(h: &Histogram<u64>) -> (f64, f64) {
    let n = h.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let at = |v: &hdrhistogram::iterators::IterationValue<u64>| {
        (
            h.median_equivalent(v.value_iterated_to()) as f64,
            v.count_at_value() as f64,
        )
    };
    let total: f64 = h.iter_recorded().map(|v| at(&v)).map(|(x, c)| x * c).sum();
    let mean = total / n as f64;
    let dev: f64 = h
        .iter_recorded()
        .map(|v| at(&v))
        .map(|(x, c)| (x - mean) * (x - mean) * c)
        .sum();
    (mean, (dev / n as f64).sqrt())
}

/// The whole `.hgrm` text. An empty histogram gets the header and footer and no rows, as Java
/// prints it.
pub(crate) fn hgrm(h: &Histogram<u64>) -> String {
    let d = usize::from(h.sigfig());
    let mut s = format!(
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    for r in rows(h, TICKS_PER_HALF_DISTANCE) {
        let value = r.value as f64 / SCALING_RATIO;
        let q = r.percentile / 100.0;
        let (value, q) = (java_fixed(value, d), java_fixed(q, 12));
        if r.percentile != 100.0 {
            let inverse = java_fixed(1.0 / (1.0 - r.percentile / 100.0), 2);
            let _ = writeln!(s, "{value:>12} {q:>2} {:>10} {inverse:>14}", r.total);
        } else {
            let _ = writeln!(s, "{value:>12} {q:>2} {:>10}", r.total);
        }
    }
    let max = if h.is_empty() { 0 } else { h.max() };
    let (mean, stdev) = mean_and_stdev(h);
    let _ = writeln!(
        s,
        "#[Mean    = {:>12}, StdDeviation   = {:>12}]",
        java_fixed(mean / SCALING_RATIO, d),
        java_fixed(stdev / SCALING_RATIO, d)
    );
    let _ = writeln!(
        s,
        "#[Max     = {:>12}, Total count    = {:>12}]",
        java_fixed(max as f64 / SCALING_RATIO, d),
        h.len()
    );
    let _ = writeln!(
        s,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        sub_bucket_count(h)
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1..=10,000 µs once each: HdrHistogram's own documentation example shape.
    fn uniform() -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in 1..=10_000 {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn total_count_is_cumulative_and_ends_at_the_total() {
        let rows = rows(&uniform(), 5);
        assert!(rows.windows(2).all(|w| w[0].total <= w[1].total));
        assert!(rows.windows(2).all(|w| w[0].percentile <= w[1].percentile));
        let last = rows.last().unwrap();
        assert_eq!((last.percentile, last.total), (100.0, 10_000));
        // Java: the row at the level reached with the last sample, then the 100% row, both at
        // the maximum.
        let before = rows[rows.len() - 2];
        assert_eq!(before.total, 10_000);
        assert!(before.percentile < 100.0);
        assert_eq!(before.value, last.value);
    }

    #[test]
    fn first_rows_follow_java_ticks() {
        let rows = rows(&uniform(), 5);
        let levels: Vec<f64> = rows.iter().take(12).map(|r| r.percentile).collect();
        // 10% steps to 50%, then 5% to 75%, then 2.5% ...
        let want = [
            0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 55.0, 60.0, 65.0, 70.0, 75.0, 77.5,
        ];
        for (got, want) in levels.iter().zip(want) {
            assert!((got - want).abs() < 1e-9, "{levels:?}");
        }
        assert_eq!((rows[0].value, rows[0].total), (1, 1));
        // 5,000 shares a bucket of width 4 with 5,001..5,003 (3 significant digits).
        assert_eq!((rows[5].value, rows[5].total), (5_003, 5_003));
    }

    #[test]
    fn text_matches_java_layout() {
        let text = hgrm(&uniform());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "       Value     Percentile TotalCount 1/(1-Percentile)"
        );
        assert_eq!(lines[1], "");
        assert_eq!(
            lines[2],
            "       0.001 0.000000000000          1           1.00"
        );
        assert_eq!(
            lines[7],
            "       5.003 0.500000000000       5003           2.00"
        );
        let n = lines.len();
        assert_eq!(lines[n - 4], "      10.007 1.000000000000      10000");
        assert_eq!(
            lines[n - 2],
            "#[Max     =       10.007, Total count    =        10000]"
        );
        assert_eq!(
            lines[n - 1],
            "#[Buckets =           22, SubBuckets     =         2048]"
        );
        assert!(lines[n - 3].starts_with("#[Mean    =        5.00"));
    }

    #[test]
    fn numbers_round_as_java_formats_them() {
        assert_eq!(java_fixed(0.15, 1), "0.2");
        assert_eq!(java_fixed(198.8405, 3), "198.841");
        assert_eq!(java_fixed(9.9996, 3), "10.000");
        assert_eq!(java_fixed(0.5, 12), "0.500000000000");
        assert_eq!(java_fixed(2.0, 2), "2.00");
        assert_eq!(java_fixed(0.001, 3), "0.001");
    }

    #[test]
    fn an_empty_histogram_has_header_and_footer_only() {
        let h = Histogram::<u64>::new(3).unwrap();
        let text = hgrm(&h);
        assert!(text.contains("Total count    =            0]"));
        assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 2);
    }
}
