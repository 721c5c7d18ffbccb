//! How much the terminal says: `-q` (only results, warnings and errors) and `-v` (more log
//! lines), over the LOCKBENCH_LOG and RUST_LOG variables.
//!
//! The flags become a log filter put into LOCKBENCH_LOG before anything starts, so the one
//! place that reads the filter (`logging`) needs no second source, and the worker processes a
//! run starts inherit the same level. `-q` also hides the progress bars and the `lockbench:`
//! narration ([`say!`](crate::say)).

use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// The log filter the flags ask for: `-q` errors only, `-v` info, `-vv` debug, `-vvv` (or
/// more) trace; `None` leaves LOCKBENCH_LOG / RUST_LOG / warnings as they are.
pub fn filter(quiet: bool, verbose: u8) -> Option<&'static str> {
    match (quiet, verbose) {
        (true, _) => Some("error"),
        (false, 0) => None,
        (false, 1) => Some("info"),
        (false, 2) => Some("debug"),
        (false, _) => Some("trace"),
    }
}

/// Applies the flags: the log filter for this process and its children, and quiet mode. Call
/// before any thread starts (it sets an environment variable).
pub fn init(quiet: bool, verbose: u8) {
    QUIET.store(quiet, Ordering::Relaxed);
    if let Some(filter) = filter(quiet, verbose) {
        // SAFETY: called first thing in main, before the runtime or any other thread exists,
        // so nothing reads the environment concurrently.
        unsafe { std::env::set_var(crate::logging::FILTER_VAR, filter) };
    }
}

/// Whether `-q` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// A `lockbench: ...` narration line on stderr, unless `-q`.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        if !$crate::verbosity::quiet() {
            eprintln!("lockbench: {}", format_args!($($arg)*));
        }
    };
}

#[cfg(test)]
mod tests {
    use super::filter;

    #[test]
    fn quiet_wins_and_each_v_is_one_level_more() {
        assert_eq!(filter(false, 0), None);
        assert_eq!(filter(false, 1), Some("info"));
        assert_eq!(filter(false, 2), Some("debug"));
        assert_eq!(filter(false, 3), Some("trace"));
        assert_eq!(filter(false, 9), Some("trace"));
        assert_eq!(filter(true, 0), Some("error"));
    }
}
