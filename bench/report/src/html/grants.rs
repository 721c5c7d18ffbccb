//! The acquisitions a chart draws over time, in bounded memory.
//!
//! An hour of redis-setnx is 25 million grants, more than a report should hold. Up to
//! [`EXACT_CAP`] grants are kept exactly (time, latency), and the throughput and latency charts
//! are then exact per bucket. Past that the grants are folded into 250 ms base buckets, each a
//! count, the exact maximum and a log-scale latency histogram ([`BINS_PER_OCTAVE`] bins per
//! doubling, so a percentile read from it is within about 10% of the exact one); the charts
//! say so in their caption. Memory is then ~1 KB per 250 ms of run, whatever the rate.

/// Grants kept exactly before folding into buckets.
pub(crate) const EXACT_CAP: usize = 250_000;
/// The base bucket width when folded, ns; every chart bucket width is a multiple of it.
pub(crate) const BASE_NS: u64 = 250_000_000;
/// Histogram resolution when folded.
const BINS_PER_OCTAVE: f64 = 4.0;
/// Bins up to 2^44 ns (about 4.9 hours).
const BINS: usize = 44 * 4;

/// One folded base bucket.
#[derive(Clone, Debug)]
struct Folded {
    n: u64,
    max: u64,
    bins: Box<[u32]>,
}

/// One chart bucket: its grants and their (p50, p99, max) latency in ns, if any.
pub(crate) type BucketStats = (u64, Option<(u64, u64, u64)>);

/// The grants of one backend.
#[derive(Clone, Debug, Default)]
pub(crate) struct Grants {
    /// (time of the grant, latency from its invoke), ns; emptied once folded.
    exact: Vec<(u64, u64)>,
    /// Per base bucket, once folded.
    folded: Vec<Option<Folded>>,
    count: u64,
    last: u64,
}

fn bin(lat: u64) -> usize {
    (((lat.max(1) as f64).log2() * BINS_PER_OCTAVE) as usize).min(BINS - 1)
}

fn bin_value(i: usize) -> u64 {
    2f64.powf((i as f64 + 0.5) / BINS_PER_OCTAVE) as u64
}

impl Grants {
    /// Adds one grant (in any order).
    pub fn push(&mut self, at: u64, lat: u64) {
        self.count += 1;
        self.last = self.last.max(at);
        if self.folded.is_empty() && self.exact.len() < EXACT_CAP {
            self.exact.push((at, lat));
            return;
        }
        for (a, l) in std::mem::take(&mut self.exact) {
            self.fold(a, l);
        }
        self.fold(at, lat);
    }

    fn fold(&mut self, at: u64, lat: u64) {
        let i = (at / BASE_NS) as usize;
        if self.folded.len() <= i {
            self.folded.resize(i + 1, None);
        }
        let b = self.folded[i].get_or_insert_with(|| Folded {
            n: 0,
            max: 0,
            bins: vec![0; BINS].into_boxed_slice(),
        });
        b.n += 1;
        b.max = b.max.max(lat);
        b.bins[bin(lat)] += 1;
    }

    /// Sorts the exact grants by time.
    pub fn finish(&mut self) {
        self.exact.sort_unstable_by_key(|g| g.0);
    }

    /// `true` with no grant.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of grants.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// The latest grant's time, ns.
    pub fn last_t(&self) -> u64 {
        self.last
    }

    /// `true` when the grants were folded into buckets (percentiles approximate).
    pub fn folded(&self) -> bool {
        !self.folded.is_empty()
    }

    /// Per bucket of `width` ns (a multiple of [`BASE_NS`] when folded) from 0 to the last
    /// grant: the number of grants and their p50, p99 and max latency in ns.
    pub fn per_bucket(&self, width: u64) -> Vec<BucketStats> {
        let n = (self.last / width + 1) as usize;
        if !self.folded() {
            let mut lat: Vec<Vec<u64>> = vec![Vec::new(); n];
            for &(at, l) in &self.exact {
                lat[(at / width) as usize].push(l);
            }
            return lat
                .into_iter()
                .map(|mut v| {
                    v.sort_unstable();
                    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
                    (
                        v.len() as u64,
                        (!v.is_empty()).then(|| (q(0.5), q(0.99), q(1.0))),
                    )
                })
                .collect();
        }
        let per = (width / BASE_NS).max(1) as usize;
        (0..n)
            .map(|i| {
                let mut bins = vec![0u64; BINS];
                let (mut count, mut max) = (0u64, 0u64);
                for b in self.folded.iter().skip(i * per).take(per).flatten() {
                    count += b.n;
                    max = max.max(b.max);
                    bins.iter_mut()
                        .zip(b.bins.iter())
                        .for_each(|(a, c)| *a += *c as u64);
                }
                let q = |p: f64| {
                    let rank = ((count - 1) as f64 * p).round() as u64;
                    let mut seen = 0;
                    for (i, c) in bins.iter().enumerate() {
                        seen += c;
                        if seen > rank {
                            return bin_value(i).min(max);
                        }
                    }
                    max
                };
                (count, (count > 0).then(|| (q(0.5), q(0.99), max)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_keeps_counts_exact_and_percentiles_close() {
        let mut g = Grants::default();
        let n = EXACT_CAP as u64 + 50_000;
        for i in 0..n {
            // 1 ms apart, latency 1..=1000 µs cycling.
            g.push(i * 1_000_000, (i % 1000 + 1) * 1_000);
        }
        g.finish();
        assert!(g.folded());
        assert_eq!(g.len(), n);
        let b = g.per_bucket(1_000_000_000);
        assert_eq!(b.iter().map(|x| x.0).sum::<u64>(), n);
        let (count, Some((p50, p99, max))) = b[3] else {
            panic!("bucket 3 is empty")
        };
        assert_eq!(count, 1000);
        assert_eq!(max, 1_000_000);
        assert!((p50 as f64 / 500_000.0 - 1.0).abs() < 0.1, "{p50}");
        assert!((p99 as f64 / 990_000.0 - 1.0).abs() < 0.1, "{p99}");
    }
}
