//! lockbench-postgres's integration tests against real PostgreSQL servers, one test binary
//! (`servers`: the pair the managed cluster starts, its kill, pause and promote faults).

mod servers;
