//! etcd lock recipes: etcd-lease and etcd-lockapi
