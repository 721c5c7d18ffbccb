//! lockbench-kube's tests: what the user asks for is checked (`spec`), the written manifests
//! read back as the API's types (`roundtrip`) and decoded by `kubectl`'s own client-side code
//! (`kubectl`). No cluster runs
//! here: nothing checks that a cluster schedules the pods or that they reach a coordinator.

mod common;
mod kubectl;
mod roundtrip;
mod spec;
