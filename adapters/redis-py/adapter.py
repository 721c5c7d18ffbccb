"""redis-py's Lock (redis.lock.Lock) behind lockbench's adapter protocol: SET NX PX with a
random token, a Lua compare-and-delete release, extend() for renewals. No fencing token.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import redis  # noqa: E402
from redis.exceptions import ConnectionError, LockError, LockNotOwnedError, TimeoutError  # noqa: E402

from lockbench_adapter import Fail, Info, env, host_port, release_all, serve  # noqa: E402

e = env()
host, port = host_port(e["endpoints"][0])
r = redis.Redis(host=host, port=port, socket_connect_timeout=5, socket_timeout=30)
r.ping()
held = {}


def errors(f):
    def call(*args):
        try:
            return f(*args)
        except LockNotOwnedError as x:
            raise Fail("lock-lost", str(x))
        except (ConnectionError, TimeoutError) as x:
            raise Info("connection-lost", str(x))
        except LockError as x:
            raise Info("other", str(x))
    return call


@errors
def acquire(key, _shared):
    lock = r.lock(f"{e['prefix']}redis-py:{key}", timeout=e["ttl"], sleep=0.01, blocking=True)
    if not lock.acquire():
        raise Fail("timeout")
    held[key] = lock


@errors
def release(key):
    lock = held.pop(key, None)
    if lock is None:
        raise Fail("lock-lost", "not held by this client")
    lock.release()


@errors
def renew(key):
    if key not in held:
        raise Fail("lock-lost", "not held by this client")
    held[key].extend(e["ttl"], replace_ttl=True)


def close():
    release_all(held)


serve("redis-py", redis.__version__, None, acquire, release, renew, close)
