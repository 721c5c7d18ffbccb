//! ZooKeeper lock recipes: zk-fair and zk-curator
