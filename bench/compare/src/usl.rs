//! Capacity beyond the measured points: Gunther's Universal Scalability Law fitted to a
//! backend's throughput at several concurrencies, with its held-out error, so a prediction
//! says how far it can be trusted.
//!
//! `X(N) = λN / (1 + σ(N−1) + κN(N−1))`: λ is the throughput of one client, σ the share of the
//! work that serialises (contention: a lock's queue, a leader's log), κ the cost of keeping
//! clients coherent with each other (crosstalk: every waiter woken by every release). With
//! κ > 0 the curve has a peak at `N* = √((1−σ)/κ)` and falls after it, which is what a herd
//! or a polling lock does; with κ = 0 it levels off towards λ/σ (Amdahl). Why this model:
//! it is the simplest one that can bend back down, its two coefficients each name a cause a
//! lock has, and it is fitted from throughput alone (Gunther, *Guerrilla Capacity Planning*,
//! 2007, chapter 4; the same fit as his `usl` R package).
//!
//! The fit: for a given λ the law is linear in σ and κ once rearranged
//! (`λN/X − 1 = σ(N−1) + κN(N−1)`), so they come from least squares through the origin, kept
//! non-negative; λ itself is the one that minimises the squared error of the predicted
//! throughput, found by golden-section search (λ is at least the best per-client throughput
//! measured, since the denominator is at least 1). Standard errors of σ and κ come from that
//! regression when there are more points than the three parameters. The held-out check fits
//! every point but the highest concurrency and predicts it: the error printed is what a
//! prediction one step beyond the measurements was off by.

/// A fitted law.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// Throughput of one client (per second).
    pub lambda: f64,
    /// Contention: the serialised share.
    pub sigma: f64,
    /// Coherency: the cost each pair of clients adds.
    pub kappa: f64,
    /// Standard error of σ (`None` with no degree of freedom left, or σ held at 0).
    pub sigma_se: Option<f64>,
    /// Standard error of κ (as [`Fit::sigma_se`]).
    pub kappa_se: Option<f64>,
    /// The points fitted.
    pub points: usize,
    /// The lowest and the highest concurrency fitted.
    pub range: (f64, f64),
}

/// Where the fitted curve peaks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Peak {
    /// At this concurrency, with this throughput (κ > 0).
    At {
        /// Concurrency at the peak.
        n: f64,
        /// Throughput there.
        throughput: f64,
    },
    /// No peak: the curve rises towards this ceiling (κ = 0, σ > 0).
    Ceiling(f64),
    /// No peak and no ceiling: linear (σ = κ = 0).
    Linear,
}

/// A prediction for the highest concurrency measured from the points below it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeldOut {
    /// The concurrency left out.
    pub n: f64,
    /// What the fit without it predicted.
    pub predicted: f64,
    /// What was measured.
    pub measured: f64,
}

impl HeldOut {
    /// The prediction's error, relative to the measurement (+0.05: 5 % too high).
    pub fn error(&self) -> f64 {
        self.predicted / self.measured - 1.0
    }
}

impl Fit {
    /// The predicted throughput at concurrency `n`.
    pub fn predict(&self, n: f64) -> f64 {
        predict(self.lambda, self.sigma, self.kappa, n)
    }

    /// Where the curve peaks, or what it tends to.
    pub fn peak(&self) -> Peak {
        if self.kappa > 0.0 && self.sigma < 1.0 {
            let n = ((1.0 - self.sigma) / self.kappa).sqrt().max(1.0);
            Peak::At {
                n,
                throughput: self.predict(n),
            }
        } else if self.sigma > 0.0 {
            Peak::Ceiling(self.lambda / self.sigma)
        } else {
            Peak::Linear
        }
    }

    /// Whether `n` lies outside the concurrencies fitted (a prediction there extrapolates).
    pub fn extrapolates(&self, n: f64) -> bool {
        n < self.range.0 || n > self.range.1
    }
}

fn predict(lambda: f64, sigma: f64, kappa: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Fits the law to `(concurrency, throughput)` points. Needs three distinct concurrencies of
/// at least 1 with positive throughput (the law has three parameters); says why otherwise.
pub fn fit(points: &[(f64, f64)]) -> Result<Fit, String> {
    let points: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|&(n, x)| n >= 1.0 && x > 0.0 && n.is_finite() && x.is_finite())
        .collect();
    let mut distinct: Vec<f64> = points.iter().map(|p| p.0).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if distinct.len() < 3 {
        return Err(format!(
            "{} distinct concurrenc{} with throughput: the law has three parameters and needs \
             at least three",
            distinct.len(),
            if distinct.len() == 1 { "y" } else { "ies" }
        ));
    }
    let best_per_client = points.iter().map(|&(n, x)| x / n).fold(0.0, f64::max);
    let sse = |lambda: f64| {
        let (s, k, _) = coefficients(&points, lambda);
        points
            .iter()
            .map(|&(n, x)| (x - predict(lambda, s, k, n)).powi(2))
            .sum::<f64>()
    };
    let lambda = golden_min(sse, best_per_client, 4.0 * best_per_client);
    let (sigma, kappa, (sigma_se, kappa_se)) = coefficients(&points, lambda);
    Ok(Fit {
        lambda,
        sigma,
        kappa,
        sigma_se,
        kappa_se,
        points: points.len(),
        range: (distinct[0], distinct[distinct.len() - 1]),
    })
}

/// The held-out check: the fit of every point below the highest concurrency, against the
/// points at it. Needs four distinct concurrencies.
pub fn held_out(points: &[(f64, f64)]) -> Result<HeldOut, String> {
    let top = points.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let below: Vec<(f64, f64)> = points.iter().copied().filter(|p| p.0 < top).collect();
    let at: Vec<f64> = points.iter().filter(|p| p.0 == top).map(|p| p.1).collect();
    let fitted = fit(&below).map_err(|e| format!("without the highest concurrency, {e}"))?;
    Ok(HeldOut {
        n: top,
        predicted: fitted.predict(top),
        measured: at.iter().sum::<f64>() / at.len() as f64,
    })
}

/// σ and κ for a given λ (least squares through the origin on the rearranged law, each kept
/// at or above 0), with their standard errors when the points leave degrees of freedom.
#[allow(clippy::type_complexity)]
fn coefficients(points: &[(f64, f64)], lambda: f64) -> (f64, f64, (Option<f64>, Option<f64>)) {
    let rows: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|&(n, x)| (n - 1.0, n * (n - 1.0), lambda * n / x - 1.0))
        .collect();
    let (mut s11, mut s12, mut s22, mut s1y, mut s2y) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(a, b, y) in &rows {
        s11 += a * a;
        s12 += a * b;
        s22 += b * b;
        s1y += a * y;
        s2y += b * y;
    }
    let det = s11 * s22 - s12 * s12;
    let residual = |s: f64, k: f64| -> f64 {
        rows.iter()
            .map(|&(a, b, y)| (y - s * a - k * b).powi(2))
            .sum()
    };
    let dof = points.len() as f64 - 3.0;
    if det > 0.0 {
        let sigma = (s22 * s1y - s12 * s2y) / det;
        let kappa = (s11 * s2y - s12 * s1y) / det;
        if sigma >= 0.0 && kappa >= 0.0 {
            let se = (dof > 0.0).then(|| residual(sigma, kappa) / dof);
            return (
                sigma,
                kappa,
                (
                    se.map(|v| (v * s22 / det).sqrt()),
                    se.map(|v| (v * s11 / det).sqrt()),
                ),
            );
        }
    }
    // One of them at 0: the better of the two one-parameter fits.
    let sigma_only = if s11 > 0.0 { (s1y / s11).max(0.0) } else { 0.0 };
    let kappa_only = if s22 > 0.0 { (s2y / s22).max(0.0) } else { 0.0 };
    let dof = dof + 1.0;
    if residual(sigma_only, 0.0) <= residual(0.0, kappa_only) {
        let se = (dof > 0.0 && s11 > 0.0).then(|| (residual(sigma_only, 0.0) / dof / s11).sqrt());
        (sigma_only, 0.0, (se, None))
    } else {
        let se = (dof > 0.0 && s22 > 0.0).then(|| (residual(0.0, kappa_only) / dof / s22).sqrt());
        (0.0, kappa_only, (None, se))
    }
}

/// The minimum of `f` on `[lo, hi]` by golden-section search.
fn golden_min(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let mut a = hi - ratio * (hi - lo);
    let mut b = lo + ratio * (hi - lo);
    let (mut fa, mut fb) = (f(a), f(b));
    for _ in 0..200 {
        if (hi - lo).abs() <= 1e-9 * hi.abs().max(1.0) {
            break;
        }
        if fa <= fb {
            hi = b;
            b = a;
            fb = fa;
            a = hi - ratio * (hi - lo);
            fa = f(a);
        } else {
            lo = a;
            a = b;
            fa = fb;
            b = lo + ratio * (hi - lo);
            fb = f(b);
        }
    }
    (lo + hi) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(lambda: f64, sigma: f64, kappa: f64, ns: &[f64]) -> Vec<(f64, f64)> {
        ns.iter()
            .map(|&n| (n, predict(lambda, sigma, kappa, n)))
            .collect()
    }

    #[test]
    fn exact_points_give_back_their_law_and_its_peak() {
        let points = curve(1000.0, 0.05, 0.002, &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0]);
        let f = fit(&points).unwrap();
        assert!((f.lambda - 1000.0).abs() < 1.0, "{f:?}");
        assert!((f.sigma - 0.05).abs() < 1e-3, "{f:?}");
        assert!((f.kappa - 0.002).abs() < 1e-4, "{f:?}");
        let Peak::At { n, throughput } = f.peak() else {
            panic!("{:?}", f.peak());
        };
        // √(0.95 / 0.002) = 21.8
        assert!((n - 21.8).abs() < 0.5, "{n}");
        assert!((throughput - predict(1000.0, 0.05, 0.002, n)).abs() < 20.0);
        assert_eq!(f.range, (1.0, 32.0));
        assert!(f.extrapolates(500.0) && !f.extrapolates(10.0));
        let h = held_out(&points).unwrap();
        assert_eq!(h.n, 32.0);
        assert!(h.error().abs() < 0.01, "{h:?}");
    }

    #[test]
    fn a_curve_that_levels_off_has_a_ceiling_not_a_peak() {
        let points = curve(500.0, 0.2, 0.0, &[1.0, 2.0, 4.0, 8.0]);
        let f = fit(&points).unwrap();
        assert!(f.kappa < 1e-6, "{f:?}");
        match f.peak() {
            Peak::Ceiling(c) => assert!((c - 2500.0).abs() < 50.0, "{c}"),
            p => panic!("{p:?}"),
        }
    }

    /// Measured points are noisy: the fit still lands near the law, says how sure it is, and
    /// the held-out error is the prediction's real error.
    #[test]
    fn noisy_points_are_fitted_with_standard_errors() {
        let noise = [1.03, 0.97, 1.02, 0.98, 1.01, 0.99, 1.02];
        let mut points = curve(800.0, 0.03, 0.001, &[1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0]);
        for (p, e) in points.iter_mut().zip(noise) {
            p.1 *= e;
        }
        let f = fit(&points).unwrap();
        assert!((f.lambda / 800.0 - 1.0).abs() < 0.1, "{f:?}");
        assert!(f.sigma_se.is_some() && f.kappa_se.is_some(), "{f:?}");
        let h = held_out(&points).unwrap();
        assert!(h.error().abs() < 0.15, "{h:?}");
    }

    #[test]
    fn too_few_concurrencies_are_refused_saying_why() {
        let e = fit(&[(1.0, 10.0), (2.0, 19.0), (2.0, 18.0)]).unwrap_err();
        assert!(e.contains("2 distinct concurrencies"), "{e}");
        let e = held_out(&curve(10.0, 0.1, 0.0, &[1.0, 2.0, 4.0])).unwrap_err();
        assert!(e.starts_with("without the highest concurrency"), "{e}");
        // Zero throughput says nothing about the law.
        assert!(fit(&[(1.0, 0.0), (2.0, 0.0), (4.0, 0.0)]).is_err());
    }
}
