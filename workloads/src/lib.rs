//! Workloads: the contention generator, the client loop and the fenced resource
