//! The statistics behind a verdict: Welch's unequal-variance t-test on the repetitions of one
//! metric, and the Benjamini–Hochberg adjustment that turns the p-values of every test in one
//! comparison into q-values, so the comparison as a whole, not each metric on its own, keeps its
//! false-alarm rate. Student's t distribution comes from `statrs`.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Sample mean.
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Unbiased sample variance (`n - 1` denominator); 0 for fewer than two samples.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Two-sided p-value of Welch's t-test that `a` and `b` have the same mean. Needs at least two
/// samples on each side (`None` otherwise). With zero variance on both sides the answer is 1
/// for equal means and 0 otherwise.
pub fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (variance(a) / na, variance(b) / nb);
    let diff = mean(a) - mean(b);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return Some(if diff == 0.0 { 1.0 } else { 0.0 });
    }
    let t = diff / se2.sqrt();
    // Welch–Satterthwaite degrees of freedom.
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let student = StudentsT::new(0.0, 1.0, df).ok()?;
    Some((2.0 * student.sf(t.abs())).clamp(0.0, 1.0))
}

/// Benjamini–Hochberg adjusted p-values (q-values), in the order of `p`.
///
/// Flagging every test whose q-value is below `alpha` keeps the expected share of false flags
/// among the flagged ones at most `alpha` (for independent or positively dependent tests, as
/// the metrics of one backend are). When no metric changed at all, as in an A/A comparison of
/// one build against itself, any flag is a false one, and the chance of one or more is then at
/// most `alpha` for the whole comparison: the nightly gate's false-alarm rate.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut q = vec![1.0; m];
    let mut smallest_after = 1.0_f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        smallest_after = smallest_after.min(p[i] * m as f64 / (rank + 1) as f64);
        q[i] = smallest_after.clamp(0.0, 1.0);
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_samples_are_not_significant() {
        let a = [10.0, 11.0, 9.0, 10.5, 9.5];
        assert!((welch_p(&a, &a).unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn matches_a_known_value() {
        // Wikipedia's "Welch's t-test" example 1: t = -2.46, df = 24.98, p = 0.021.
        let a = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let b = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let p = welch_p(&a, &b).unwrap();
        assert!((p - 0.02106).abs() < 5e-4, "p = {p}");
    }

    /// R's `p.adjust(c(0.01, 0.04, 0.03, 0.005, 0.5), "BH")`: 0.025 0.05 0.05 0.025 0.5.
    #[test]
    fn benjamini_hochberg_matches_r() {
        let q = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005, 0.5]);
        let r = [0.025, 0.05, 0.05, 0.025, 0.5];
        for (got, want) in q.iter().zip(r) {
            assert!((got - want).abs() < 1e-12, "{q:?}");
        }
        assert!(benjamini_hochberg(&[]).is_empty());
        assert_eq!(benjamini_hochberg(&[0.2]), [0.2]);
    }

    #[test]
    fn far_apart_samples_are_significant() {
        let a = [100.0, 101.0, 99.0];
        let b = [200.0, 202.0, 198.0];
        assert!(welch_p(&a, &b).unwrap() < 0.001);
        assert_eq!(welch_p(&a[..1], &b), None);
    }
}
