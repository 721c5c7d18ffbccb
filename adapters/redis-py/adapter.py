"""redis-py's Lock behind lockbench's adapter protocol (docs/adapter-protocol.md).

One process is one client: one Redis connection pool and the Lock objects it holds.
"""
import json
import os
import sys

import redis
from redis.exceptions import ConnectionError, LockError, LockNotOwnedError, TimeoutError

host, port = os.environ["LOCKBENCH_ENDPOINTS"].split(",")[0].rsplit(":", 1)
prefix = os.environ["LOCKBENCH_PREFIX"]
ttl = int(os.environ["LOCKBENCH_TTL_MS"]) / 1000.0
r = redis.Redis(host=host, port=int(port), socket_connect_timeout=5, socket_timeout=30)
held = {}


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def answer(req):
    op, key = req["op"], req.get("key")
    name = f"{prefix}redis-py:{key}"
    try:
        if op == "acquire":
            lock = r.lock(name, timeout=ttl, sleep=0.01, blocking=True)
            if lock.acquire():
                held[key] = lock
                return {"ok": True}
            return {"fail": "timeout"}
        if op in ("release", "renew"):
            lock = held.get(key)
            if lock is None:
                return {"fail": "lock-lost", "detail": "not held by this client"}
            if op == "release":
                del held[key]
                lock.release()
            else:
                lock.extend(ttl, replace_ttl=True)
            return {"ok": True}
    except LockNotOwnedError as e:
        return {"fail": "lock-lost", "detail": str(e)}
    except (ConnectionError, TimeoutError) as e:
        return {"info": "connection-lost", "detail": str(e)}
    except LockError as e:
        return {"info": "other", "detail": str(e)}
    return {"fail": "other", "detail": f"unknown op {op}"}


r.ping()
say({"hello": 1, "library": "redis-py", "version": redis.__version__, "fencing": None})
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "close":
        for lock in held.values():
            try:
                lock.release()
            except Exception:
                pass
        say({"id": req["id"], "ok": True})
        break
    out = answer(req)
    out["id"] = req["id"]
    say(out)
