//! Welch's unequal-variance t-test, self-contained (no statistics crate): Student's t CDF via
//! the regularised incomplete beta function (Lentz's continued fraction, as in Numerical
//! Recipes) and a Lanczos log-gamma. Accurate to ~1e-10, far beyond what a 0.05 cut needs.

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
    // P(|T| > |t|) = I_{df/(df+t^2)}(df/2, 1/2).
    Some(beta_reg(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0))
}

fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 6] = [
        76.180_091_729_471_46,
        -86.505_320_329_416_77,
        24.014_098_240_830_91,
        -1.231_739_572_450_155,
        0.001_208_650_973_866_179,
        -0.000_005_395_239_384_953,
    ];
    let tmp = x + 5.5;
    let tmp = tmp - (x + 0.5) * tmp.ln();
    let mut ser = 1.000_000_000_190_015;
    let mut y = x;
    for g in G {
        y += 1.0;
        ser += g / y;
    }
    -tmp + (2.506_628_274_631_000_5 * ser / x).ln()
}

/// Regularised incomplete beta function I_x(a, b).
fn beta_reg(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-12 {
            break;
        }
    }
    h
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

    #[test]
    fn far_apart_samples_are_significant() {
        let a = [100.0, 101.0, 99.0];
        let b = [200.0, 202.0, 198.0];
        assert!(welch_p(&a, &b).unwrap() < 0.001);
        assert_eq!(welch_p(&a[..1], &b), None);
    }
}
