"""A deliberately broken adapter: each mode breaks the protocol in one way, to prove that
lockbench names the break within seconds and never trusts the run (issue 21 item 5).

Usage: broken_adapter.py MODE, MODE one of: garbage-hello, no-hello, exit-before-hello,
garbage-answer, unasked-answer, second-answer, hang-on-release, exit-on-acquire, good.
"""
import json
import sys
import time

mode = sys.argv[1]


def say(obj):
    sys.stdout.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
    sys.stdout.flush()


if mode == "garbage-hello":
    say("Picked up _JAVA_OPTIONS: -Xmx1g")
    time.sleep(30)
if mode == "no-hello":
    time.sleep(30)
if mode == "exit-before-hello":
    sys.exit(3)
say({"hello": 1, "library": "broken-" + mode, "version": "0", "fencing": None})
held = set()
for line in sys.stdin:
    req = json.loads(line)
    rid, op, key = req["id"], req["op"], req.get("key")
    if op == "close":
        say({"id": rid, "ok": True})
        break
    if op == "acquire" and mode == "garbage-answer":
        say("OK")
        continue
    if op == "acquire" and mode == "unasked-answer":
        say({"id": rid + 5, "ok": True})
        continue
    if op == "acquire" and mode == "exit-on-acquire":
        sys.exit(4)
    if op == "release" and mode == "hang-on-release":
        time.sleep(60)
    if op == "acquire" and mode == "second-answer":
        say({"id": rid, "ok": True})
        say({"id": rid, "ok": True})
        continue
    # "good": a lock table in this process only (one client: always free).
    if op == "acquire":
        held.add(key)
        say({"id": rid, "ok": True})
    elif op in ("release", "renew"):
        if key in held:
            if op == "release":
                held.discard(key)
            say({"id": rid, "ok": True})
        else:
            say({"id": rid, "fail": "lock-lost"})
