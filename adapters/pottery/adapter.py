"""pottery's Redlock behind lockbench's adapter protocol: the Redlock algorithm over the
five independent Redis servers. No fencing token. pottery allows 3 extensions of a lease by
default (num_extensions); renewals past that fail, which lockbench records as lock-lost.
"""
import importlib.metadata
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import redis  # noqa: E402
from pottery import Redlock  # noqa: E402
from pottery.exceptions import (  # noqa: E402
    ExtendUnlockedLock, QuorumNotAchieved, ReleaseUnlockedLock, TooManyExtensions)

from lockbench_adapter import Fail, Info, env, host_port, release_all, serve  # noqa: E402

e = env()
masters = set()
for ep in e["endpoints"]:
    host, port = host_port(ep)
    masters.add(redis.Redis(host=host, port=port, socket_connect_timeout=2, socket_timeout=2))
held = {}


def acquire(key, _shared):
    lock = Redlock(key=f"{e['prefix']}pottery:{key}", masters=masters,
                   auto_release_time=e["ttl"])
    if not lock.acquire(blocking=True, timeout=-1):
        raise Fail("timeout")
    held[key] = lock


def release(key):
    lock = held.pop(key, None)
    if lock is None:
        raise Fail("lock-lost", "not held by this client")
    try:
        lock.release()
    except ReleaseUnlockedLock as x:
        raise Fail("lock-lost", repr(x))
    except QuorumNotAchieved as x:
        raise Info("no-quorum", repr(x))


def renew(key):
    lock = held.get(key)
    if lock is None:
        raise Fail("lock-lost", "not held by this client")
    try:
        lock.extend()
    except (ExtendUnlockedLock, TooManyExtensions) as x:
        raise Fail("lock-lost", repr(x))
    except QuorumNotAchieved as x:
        raise Info("no-quorum", repr(x))


def close():
    release_all(held)


serve("pottery", importlib.metadata.version("pottery"), None, acquire, release, renew, close)
