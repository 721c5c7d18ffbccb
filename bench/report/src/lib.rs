//! The results model, results.json, the terminal table and the run directory
