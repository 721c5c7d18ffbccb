"""kazoo's Lock (kazoo.recipe.lock) behind lockbench's adapter protocol: the ZooKeeper
recipe with ephemeral-sequential nodes, and its ReadLock/WriteLock for shared holds. The
fencing token is the lock node's sequence number (it only grows under one lock's node).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import kazoo  # noqa: E402
from kazoo.client import KazooClient  # noqa: E402
from kazoo.exceptions import ConnectionLoss, NoNodeError, SessionExpiredError  # noqa: E402

from lockbench_adapter import Fail, Info, env, serve  # noqa: E402

e = env()
zk = KazooClient(hosts=",".join(e["endpoints"]), timeout=e["ttl"])
zk.start(timeout=5)
# zk-curator's layout ({root}/curator/k{key}): its observer reads these locks too
# (adapter.toml's [observe]; the lowest sequence holds, named by its sequence, the token).
root = "/lockbench-lib/" + e["prefix"] + "/curator"
held = {}


def sequence(lock):
    node = lock.node  # e.g. "__lock__0000000042" or "f1e2...__rlock__0000000042"
    return int(node[-10:])


def acquire(key, shared):
    path = f"{root}/k{key}"
    kind = zk.ReadLock if shared else zk.WriteLock
    lock = kind(path, identifier=str(e["client"]))
    try:
        lock.acquire(blocking=True)
    except (ConnectionLoss, SessionExpiredError) as x:
        raise Info("connection-lost", repr(x))
    held[key] = lock
    return sequence(lock)


def release(key):
    lock = held.pop(key, None)
    if lock is None:
        raise Fail("lock-lost", "not held by this client")
    node = f"{lock.path}/{lock.node}"
    try:
        if not zk.exists(node):
            raise Fail("lock-lost", f"{node} is gone (session expired)")
        lock.release()
    except (ConnectionLoss, SessionExpiredError) as x:
        raise Info("connection-lost", repr(x))


def renew(key):
    lock = held.get(key)
    if lock is None:
        raise Fail("lock-lost", "not held by this client")
    try:
        if not zk.exists(f"{lock.path}/{lock.node}"):
            raise Fail("lock-lost", "the lock node is gone (session expired)")
    except (ConnectionLoss, SessionExpiredError, NoNodeError) as x:
        raise Info("connection-lost", repr(x))


def close():
    zk.stop()
    zk.close()


serve("kazoo", kazoo.__version__ if hasattr(kazoo, "__version__") else "2.10.0",
      "the lock node's sequence number", acquire, release, renew, close, shared=True)
