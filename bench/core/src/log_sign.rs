//! What a server's own log says a fault did to it: the lines a system names as the signs of
//! an effect ([`LogSign`]), counted in the part of its servers' logs written while the fault
//! lasted.
//!
//! Why from the log: a stalled disk shows first in the servers' own words (etcd's "leader
//! failed to send out heartbeat on time", a new leader's "became leader", ZooKeeper's
//! "Expiring session"), and those words are evidence independent of the clients' history. The
//! signs are the system's, in its crate, beside the server's command line that makes the log.

/// One kind of line in a server's log that shows a fault's effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSign {
    /// What the line says happened, for humans ("leader changes").
    pub what: &'static str,
    /// The text every such line contains, and no other line does.
    pub line_has: &'static str,
}

impl LogSign {
    /// How many lines of `log` show each of `signs`, in their order, leaving out the signs no
    /// line shows.
    pub fn count(signs: &[LogSign], log: &str) -> Vec<(LogSign, usize)> {
        signs
            .iter()
            .map(|s| (*s, log.lines().filter(|l| l.contains(s.line_has)).count()))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each sign counts the lines that contain its text; a sign no line shows is left out.
    #[test]
    fn signs_count_their_lines() {
        let signs = [
            LogSign {
                what: "leader changes",
                line_has: "became leader",
            },
            LogSign {
                what: "slow syncs",
                line_has: "slow fdatasync",
            },
        ];
        let log = "a became leader at term 3\nx\nb became leader at term 4\n";
        assert_eq!(LogSign::count(&signs, log), vec![(signs[0], 2)]);
        assert!(LogSign::count(&signs, "").is_empty());
    }
}
