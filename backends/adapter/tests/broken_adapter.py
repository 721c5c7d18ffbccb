"""A deliberately broken adapter: each mode breaks the protocol in one way, to prove that
lockbench names the break within seconds and never trusts the run.

Usage: broken_adapter.py MODE [N], MODE one of: garbage-hello, no-hello, exit-before-hello,
garbage-answer, unasked-answer, second-answer, hang-on-release, exit-on-acquire, good, and the
adapters that go bad mid-run: garbage-after, exit-after, hang-after (answer N requests well,
then print garbage, exit, or stop answering; N defaults to 20). slow-hello SECONDS is a good
adapter that says hello only after SECONDS.
"""
import json
import sys
import time

mode = sys.argv[1]
after = int(sys.argv[2]) if len(sys.argv) > 2 and mode.endswith("-after") else 20


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
if mode == "slow-hello":
    time.sleep(float(sys.argv[2]))
say({"hello": 1, "library": "broken-" + mode, "version": "0", "fencing": None})
held = set()
answered = 0
for line in sys.stdin:
    req = json.loads(line)
    rid, op, key = req["id"], req["op"], req.get("key")
    answered += 1
    if answered > after and mode == "garbage-after":
        say("Traceback (most recent call last):")
        continue
    if answered > after and mode == "exit-after":
        sys.exit(5)
    if answered > after and mode == "hang-after":
        time.sleep(600)
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
