#!/usr/bin/python3
"""pylock: redis-py's Lock, put through lockpick's scenarios.

A lock program in Python for lockpick's worker protocol (docs/worker-protocol.md):
it reads one JSON request per line on stdin and writes one JSON reply per line
on stdout, until stdin ends. The lock is redis-py's own `redis.lock.Lock`
(SET NX PX to acquire, a Lua compare-and-delete to release, a Lua
compare-and-PEXPIRE to extend), on the node lockpick names `master`.

    sudo apt-get install python3-redis        # Debian's redis-py
    lockpick run failover-lock-loss --subject-cmd examples/pylock/pylock.py

It imports nothing from lockpick. redis-py's Lock has no fencing tokens, so a
fenced scenario is answered with an error (lockpick refuses to count it).
"""

import json
import sys
import time

import redis
import redis.exceptions as rerr


def main():
    for line in sys.stdin:
        req = json.loads(line)
        started = time.monotonic()
        try:
            reply = handle(req, started)
        except rerr.ResponseError as e:
            # An error reply: the command ran and failed, nothing changed.
            reply = {"ok": False, "error": "redis: " + str(e)}
        except (rerr.ConnectionError, rerr.TimeoutError, OSError) as e:
            # Through lockpick's proxies a dead node looks like a reset or
            # closed connection, a frozen one like a timeout: the command may
            # have run, so the outcome is unknown.
            reply = {"ok": False, "unknown": True, "error": type(e).__name__ + ": " + str(e)}
        reply["id"] = req["id"]
        # One reply per line, flushed at once: lockpick waits for it.
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def handle(req, started):
    op = req["op"]
    if op == "hello":
        with connect(req) as r:
            r.ping()  # warm up: the first connection costs the most
        return {"ok": True}
    if req.get("fenced"):
        return {"ok": False, "error": "pylock: redis-py's Lock has no fencing tokens"}
    with connect(req) as r:
        return locked(r, req, started)


def locked(r, req, started):
    op = req["op"]
    ttl_s = req["ttl_ms"] / 1000.0
    if op == "acquire":
        lock = r.lock(req["key"], timeout=ttl_s, blocking=False, thread_local=False)
        if not lock.acquire(blocking=False):
            return {"ok": False, "error": "taken"}
        return {"ok": True, "token": lock.local.token.decode(), "valid_ms": valid_ms(req, started)}
    lock = r.lock(req["key"], timeout=ttl_s, thread_local=False)
    lock.local.token = req["token"].encode()
    try:
        if op == "release":
            lock.release()
            return {"ok": True}
        if op == "extend":
            lock.extend(ttl_s, replace_ttl=True)
            return {"ok": True, "valid_ms": valid_ms(req, started)}
    except rerr.LockNotOwnedError:
        # The script ran and found another token (or none): not held.
        return {"ok": False, "error": "not held"}
    return {"ok": False, "error": "unsupported op " + op}


def connect(req):
    """A client for this request alone, bounded by its timeout_ms.

    redis-py sets timeouts per connection pool, and each request has a
    timeout of its own. No retries: a retried command would hide that the
    first try may have run.
    """
    host, port = req["master"].rsplit(":", 1)
    timeout = max(req["timeout_ms"], 1) / 1000.0
    return redis.Redis(host=host, port=int(port), socket_timeout=timeout,
                       socket_connect_timeout=min(timeout, 0.25), retry_on_timeout=False)


def valid_ms(req, started):
    """What is left of the TTL after the time this call took."""
    return int(req["ttl_ms"] - (time.monotonic() - started) * 1000)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
