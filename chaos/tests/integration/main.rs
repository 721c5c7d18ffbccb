//! lockbench-chaos's integration tests, one test binary: `clock` (real clock shifts), `disk`
//! (slow and frozen disks), `faults` (fault verbs against real
//! servers in private network namespaces), `loss` (`packet-loss` counted end to end) and
//! `toxiproxy` (the Toxiproxy-compatible API driven by an independent client).

mod clock;
mod disk;
mod faults;
mod loss;
mod toxiproxy;
