//! Managed ZooKeeper, etcd and Redis servers started from the OS packages
