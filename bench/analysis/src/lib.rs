//! Checkers and figures computed from a run's history
