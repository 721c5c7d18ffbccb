//! Redis lock recipes: redis-setnx and redlock
