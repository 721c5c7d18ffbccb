"""The adapter protocol's loop for Python adapters (docs/adapter-protocol.md).

An adapter module builds its library's client from the environment, then calls
serve(hello, acquire, release, renew, close) with four callables that raise Fail or Info
for a definite or unknown failure. This module owns the lines: it reads each request,
calls the library, and writes exactly one answer with the request's id.
"""
import json
import os
import sys


class Fail(Exception):
    """The call definitely did not happen: Fail("lock-lost", "detail")."""

    def __init__(self, kind, detail=""):
        super().__init__(detail)
        self.kind, self.detail = kind, detail


class Info(Fail):
    """The call's outcome is unknown: Info("connection-lost", "detail")."""


def env():
    """What lockbench tells every adapter."""
    return {
        "endpoints": os.environ["LOCKBENCH_ENDPOINTS"].split(","),
        "client": int(os.environ["LOCKBENCH_CLIENT"]),
        "prefix": os.environ["LOCKBENCH_PREFIX"],
        "ttl": int(os.environ["LOCKBENCH_TTL_MS"]) / 1000.0,
    }


def host_port(endpoint):
    host, port = endpoint.rsplit(":", 1)
    return host, int(port)


def release_all(held):
    """A close's best effort: release every lock still held (a lock already lost is fine)."""
    for lock in held.values():
        try:
            lock.release()
        except Exception:
            pass
    held.clear()


def _say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def serve(library, version, fencing, acquire, release, renew, close, shared=False):
    """Writes the hello, then answers requests until close or the end of input.

    acquire(key, shared) returns the fencing token (an int) or None; release(key),
    renew(key) and close() return nothing. Each may raise Fail or Info.
    """
    hello = {"hello": 1, "library": library, "version": version, "fencing": fencing}
    if shared:
        hello["shared"] = True
    _say(hello)
    for line in sys.stdin:
        req = json.loads(line)
        rid, op, key = req["id"], req["op"], req.get("key")
        try:
            if op in ("acquire", "acquire_shared"):
                token = acquire(key, op == "acquire_shared")
                out = {"ok": True} if token is None else {"ok": True, "token": int(token)}
            elif op == "release":
                release(key)
                out = {"ok": True}
            elif op == "renew":
                renew(key)
                out = {"ok": True}
            elif op == "close":
                try:
                    close()
                finally:
                    _say({"id": rid, "ok": True})
                return
            else:
                out = {"fail": "other", "detail": f"unknown op {op}"}
        except Info as e:
            out = {"info": e.kind, "detail": e.detail}
        except Fail as e:
            out = {"fail": e.kind, "detail": e.detail}
        except Exception as e:  # the library raised something the adapter did not expect
            out = {"info": "other", "detail": f"{type(e).__name__}: {e}"}
        out["id"] = rid
        _say(out)
    close()
