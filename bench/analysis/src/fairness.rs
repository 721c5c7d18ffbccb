//! Fairness across clients.

/// Jain's fairness index of per-client counts: 1.0 when every client got the same share,
/// 1/n when one client got everything. `None` for no clients or no acquisitions.
pub fn jain(counts: &[u64]) -> Option<f64> {
    let sum: f64 = counts.iter().map(|&c| c as f64).sum();
    let squares: f64 = counts.iter().map(|&c| (c as f64) * (c as f64)).sum();
    (squares > 0.0).then(|| sum * sum / (counts.len() as f64 * squares))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_shares_are_fair_and_one_winner_is_not() {
        assert_eq!(jain(&[5, 5, 5, 5]), Some(1.0));
        assert_eq!(jain(&[8, 0, 0, 0]), Some(0.25));
        assert_eq!(jain(&[0, 0]), None);
    }
}
