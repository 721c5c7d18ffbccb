//! [`Toxic`]: what a [`crate::LinkProxy`] does to the bytes of its links, in Toxiproxy's
//! vocabulary, and how one direction of one link applies a proxy's toxics to each chunk.
//!
//! Why Toxiproxy's vocabulary: the proxy is driven both in-process (the link nemesis) and
//! through a Toxiproxy-compatible HTTP API ([`crate::ToxiproxyApi`]), so a toxic here is
//! exactly a Toxiproxy toxic: a name, a [`Stream`] (`upstream` = the client's requests,
//! `downstream` = the server's replies), a toxicity (the probability that it applies to a
//! link) and a kind with its attributes. Only the two kinds a lock benchmark needs exist:
//! `latency` (latency ± jitter) and `timeout` (a black hole; with a timeout > 0 the link is
//! also closed that long after the toxic reached it).
//!
//! How toxics combine (as in Toxiproxy's chain): any applying `timeout` drops the chunk;
//! otherwise the applying latencies add up. Chunks keep their order (a chunk is never
//! delivered before an earlier one). Toxicity is drawn once per (link direction, toxic), when
//! the toxic first reaches the link (Toxiproxy draws when the toxic starts on a link, too).
//! This file is pure logic (no sockets), so it is unit-tested here.

use rand::Rng;
use std::time::Duration;
use tokio::time::Instant;

/// A link direction, as Toxiproxy names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stream {
    /// Client to server: the requests.
    Upstream,
    /// Server to client: the replies (Toxiproxy's default).
    Downstream,
}

impl Stream {
    /// Toxiproxy's name: `upstream` or `downstream`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Upstream => "upstream",
            Stream::Downstream => "downstream",
        }
    }

    /// Parses Toxiproxy's name (case-insensitive, as Toxiproxy does).
    pub fn parse(s: &str) -> Option<Stream> {
        match s.to_ascii_lowercase().as_str() {
            "upstream" => Some(Stream::Upstream),
            "downstream" => Some(Stream::Downstream),
            _ => None,
        }
    }
}

/// What a toxic does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToxicKind {
    /// Toxiproxy's `latency`: every chunk is delivered `latency ± jitter` (uniform) after it
    /// arrived.
    Latency {
        /// The added delay.
        latency: Duration,
        /// The spread around it.
        jitter: Duration,
    },
    /// Toxiproxy's `timeout`: every chunk is dropped; with a non-zero `timeout` the link is
    /// closed that long after the toxic reached it, with zero it stays open (a black hole).
    Timeout {
        /// When to close the link (zero: never).
        timeout: Duration,
    },
}

impl ToxicKind {
    /// Toxiproxy's type name.
    pub fn type_name(&self) -> &'static str {
        match self {
            ToxicKind::Latency { .. } => "latency",
            ToxicKind::Timeout { .. } => "timeout",
        }
    }
}

/// One named toxic on one direction of a proxy's links.
#[derive(Clone, Debug, PartialEq)]
pub struct Toxic {
    /// Unique per proxy (Toxiproxy's default: `<type>_<stream>`).
    pub name: String,
    /// Which direction it acts on.
    pub stream: Stream,
    /// Probability (0 to 1) that it applies to a given link.
    pub toxicity: f32,
    /// What it does.
    pub kind: ToxicKind,
}

impl Toxic {
    /// A toxic with toxicity 1 named like Toxiproxy's default (`<type>_<stream>`).
    pub fn new(stream: Stream, kind: ToxicKind) -> Toxic {
        Toxic {
            name: format!("{}_{}", kind.type_name(), stream.as_str()),
            stream,
            toxicity: 1.0,
            kind,
        }
    }
}

/// A proxy's toxics as its links see them: each entry has an id, new when the toxic is
/// added or replaced, so a link draws its toxicity once per toxic and restarts a timeout when
/// the toxic changes (as Toxiproxy restarts an updated toxic).
#[derive(Clone, Debug, Default)]
pub(crate) struct ToxicSet {
    entries: Vec<(u64, Toxic)>,
    next_id: u64,
}

impl ToxicSet {
    /// The toxics, in the order they were added.
    pub(crate) fn list(&self) -> Vec<Toxic> {
        self.entries.iter().map(|(_, t)| t.clone()).collect()
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.entries.iter().position(|(_, t)| t.name == name)
    }

    /// Adds `toxic`; `false` (and no change) when one of that name exists.
    pub(crate) fn add(&mut self, toxic: Toxic) -> bool {
        if self.position(&toxic.name).is_some() {
            return false;
        }
        self.next_id += 1;
        self.entries.push((self.next_id, toxic));
        true
    }

    /// Replaces the toxic named like `toxic`; `false` when there is none.
    pub(crate) fn replace(&mut self, toxic: Toxic) -> bool {
        let Some(i) = self.position(&toxic.name) else {
            return false;
        };
        self.next_id += 1;
        self.entries[i] = (self.next_id, toxic);
        true
    }

    /// Removes the toxic `name`; `false` when there is none.
    pub(crate) fn remove(&mut self, name: &str) -> bool {
        let Some(i) = self.position(name) else {
            return false;
        };
        self.entries.remove(i);
        true
    }

    /// Replaces every toxic with `toxics`.
    pub(crate) fn set(&mut self, toxics: Vec<Toxic>) {
        self.entries.clear();
        for t in toxics {
            self.add(t);
        }
    }
}

/// One toxic as one link direction sees it.
#[derive(Clone, Copy, Debug)]
struct Seen {
    id: u64,
    applies: bool,
    kind: ToxicKind,
    since: Instant,
}

/// What happens to a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Deliver it at this time (or right after the previous chunk, if that is later).
    At(Instant),
    /// Swallow it.
    Drop,
}

/// One direction of one link: the toxics of its stream, each drawn once for toxicity.
#[derive(Debug)]
pub(crate) struct LinkView {
    stream: Stream,
    seen: Vec<Seen>,
}

impl LinkView {
    pub(crate) fn new(stream: Stream) -> LinkView {
        LinkView {
            stream,
            seen: Vec::new(),
        }
    }

    /// Catches up with `set` at `now`: toxics already seen keep their draw and start time,
    /// new ones are drawn, removed ones are forgotten.
    pub(crate) fn sync(&mut self, set: &ToxicSet, now: Instant, rng: &mut impl Rng) {
        let mut seen = Vec::with_capacity(set.entries.len());
        for (id, t) in set.entries.iter().filter(|(_, t)| t.stream == self.stream) {
            let s = match self.seen.iter().find(|s| s.id == *id) {
                Some(s) => *s,
                None => Seen {
                    id: *id,
                    applies: t.toxicity >= 1.0 || rng.random::<f32>() < t.toxicity,
                    kind: t.kind,
                    since: now,
                },
            };
            seen.push(s);
        }
        self.seen = seen;
    }

    /// The fate of a chunk that arrived at `now`.
    pub(crate) fn fate(&self, now: Instant, rng: &mut impl Rng) -> Fate {
        let mut delay = Duration::ZERO;
        for s in self.seen.iter().filter(|s| s.applies) {
            match s.kind {
                ToxicKind::Timeout { .. } => return Fate::Drop,
                ToxicKind::Latency { latency, jitter } => {
                    let j = jitter.as_micros() as i64;
                    let offset = if j > 0 { rng.random_range(-j..=j) } else { 0 };
                    let d = (latency.as_micros() as i64 + offset).max(0) as u64;
                    delay += Duration::from_micros(d);
                }
            }
        }
        Fate::At(now + delay)
    }

    /// When an applying `timeout` toxic closes the link, if one does.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.seen
            .iter()
            .filter(|s| s.applies)
            .filter_map(|s| match s.kind {
                ToxicKind::Timeout { timeout } if !timeout.is_zero() => Some(s.since + timeout),
                ToxicKind::Timeout { .. } | ToxicKind::Latency { .. } => None,
            })
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn latency(stream: Stream, l: u64) -> Toxic {
        Toxic::new(
            stream,
            ToxicKind::Latency {
                latency: ms(l),
                jitter: Duration::ZERO,
            },
        )
    }

    #[test]
    fn names_default_to_type_and_stream() {
        assert_eq!(latency(Stream::Upstream, 1).name, "latency_upstream");
        let t = Toxic::new(
            Stream::Downstream,
            ToxicKind::Timeout {
                timeout: Duration::ZERO,
            },
        );
        assert_eq!(t.name, "timeout_downstream");
        assert_eq!(Stream::parse("UpStream"), Some(Stream::Upstream));
        assert_eq!(Stream::parse("sideways"), None);
    }

    #[test]
    fn latencies_of_the_same_stream_add_up_and_others_are_ignored() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut set = ToxicSet::default();
        assert!(set.add(latency(Stream::Downstream, 50)));
        let mut second = latency(Stream::Downstream, 20);
        second.name = "more".into();
        assert!(set.add(second));
        assert!(set.add(latency(Stream::Upstream, 1000)));
        assert!(!set.add(latency(Stream::Upstream, 1)), "names are unique");
        let now = Instant::now();
        let mut down = LinkView::new(Stream::Downstream);
        down.sync(&set, now, &mut rng);
        assert_eq!(down.fate(now, &mut rng), Fate::At(now + ms(70)));
        assert_eq!(down.deadline(), None);
    }

    #[test]
    fn a_timeout_drops_and_closes_only_when_non_zero() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let mut set = ToxicSet::default();
        set.add(latency(Stream::Upstream, 5));
        let hole = |t| Toxic::new(Stream::Upstream, ToxicKind::Timeout { timeout: ms(t) });
        set.add(hole(0));
        let t0 = Instant::now();
        let mut up = LinkView::new(Stream::Upstream);
        up.sync(&set, t0, &mut rng);
        assert_eq!(up.fate(t0, &mut rng), Fate::Drop);
        assert_eq!(up.deadline(), None, "timeout 0 keeps the link open");
        assert!(set.replace(hole(300)));
        let t1 = t0 + ms(10);
        up.sync(&set, t1, &mut rng);
        assert_eq!(
            up.deadline(),
            Some(t1 + ms(300)),
            "a replaced toxic restarts"
        );
        up.sync(&set, t1 + ms(100), &mut rng);
        assert_eq!(
            up.deadline(),
            Some(t1 + ms(300)),
            "an unchanged toxic keeps its start"
        );
        assert!(set.remove("timeout_upstream"));
        up.sync(&set, t1, &mut rng);
        assert_eq!(up.fate(t1, &mut rng), Fate::At(t1 + ms(5)));
    }

    #[test]
    fn toxicity_is_drawn_once_per_link() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut set = ToxicSet::default();
        let mut t = latency(Stream::Downstream, 10);
        t.toxicity = 0.5;
        set.add(t);
        let now = Instant::now();
        let mut applied = 0;
        for _ in 0..1000 {
            let mut v = LinkView::new(Stream::Downstream);
            v.sync(&set, now, &mut rng);
            let first = v.fate(now, &mut rng);
            for _ in 0..5 {
                v.sync(&set, now, &mut rng);
                assert_eq!(v.fate(now, &mut rng), first, "one draw per link");
            }
            applied += usize::from(first != Fate::At(now));
        }
        assert!((400..600).contains(&applied), "{applied} of 1000 links");
        set.set(vec![]);
        assert!(set.list().is_empty());
    }

    #[test]
    fn jitter_stays_within_bounds() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let mut set = ToxicSet::default();
        set.add(Toxic::new(
            Stream::Downstream,
            ToxicKind::Latency {
                latency: ms(50),
                jitter: ms(10),
            },
        ));
        let now = Instant::now();
        let mut v = LinkView::new(Stream::Downstream);
        v.sync(&set, now, &mut rng);
        let (mut lo, mut hi) = (ms(1000), Duration::ZERO);
        for _ in 0..2000 {
            let Fate::At(at) = v.fate(now, &mut rng) else {
                panic!("dropped")
            };
            lo = lo.min(at - now);
            hi = hi.max(at - now);
        }
        assert!(lo >= ms(40) && lo < ms(42), "{lo:?}");
        assert!(hi <= ms(60) && hi > ms(58), "{hi:?}");
    }
}
