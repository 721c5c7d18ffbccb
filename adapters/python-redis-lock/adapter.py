"""python-redis-lock (redis_lock.Lock) with auto_renewal on, behind lockbench's adapter
protocol: a renewal thread extends the key every 2/3 of its expiry, so a paused process
(its thread stopped with it) loses the lock while a live one never does. No fencing token.
"""
import importlib.metadata
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import redis  # noqa: E402
import redis_lock  # noqa: E402

from lockbench_adapter import Fail, Info, env, host_port, release_all, serve  # noqa: E402

e = env()
host, port = host_port(e["endpoints"][0])
r = redis.Redis(host=host, port=port, socket_connect_timeout=5, socket_timeout=30)
r.ping()
expire = max(1, round(e["ttl"]))
held = {}


def acquire(key, _shared):
    lock = redis_lock.Lock(r, f"{e['prefix']}prl:{key}", expire=expire, auto_renewal=True)
    try:
        lock.acquire(blocking=True)
    except redis.exceptions.ConnectionError as x:
        raise Info("connection-lost", str(x))
    held[key] = lock


def release(key):
    lock = held.pop(key, None)
    if lock is None:
        raise Fail("lock-lost", "not held by this client")
    try:
        lock.release()
    except redis_lock.NotAcquired as x:
        raise Fail("lock-lost", str(x))
    except redis.exceptions.ConnectionError as x:
        raise Info("connection-lost", str(x))


def renew(key):
    lock = held.get(key)
    if lock is None:
        raise Fail("lock-lost", "not held by this client")
    try:
        lock.extend(expire)
    except redis_lock.NotAcquired as x:
        raise Fail("lock-lost", str(x))
    except redis.exceptions.ConnectionError as x:
        raise Info("connection-lost", str(x))


def close():
    release_all(held)


serve("python-redis-lock", importlib.metadata.version("python-redis-lock"), None,
      acquire, release, renew, close)
