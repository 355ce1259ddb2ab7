#!/usr/bin/python3
"""pyetcdlock: an etcd lock in Python, put through lockpick's scenarios.

A lock program for lockpick's worker protocol (docs/worker-protocol.md) on
Debian's python3-etcd3: it reads one JSON request per line on stdin and
writes one JSON reply per line on stdout, until stdin ends. The lock is
python-etcd3's own recipe (etcd3.Lock): a lease of the request's TTL, and a
transaction that puts the key with that lease if it does not exist yet; the
release deletes the key if it still holds our token.

    sudo apt-get install python3-etcd3
    lockpick run etcd-pause-holder --subject-cmd "examples/pyetcdlock/pyetcdlock.py --block --renew" \\
        --subject-shape etcd --subject-caps block,renew

By default it tries once per acquire. With --block it waits for the lock
itself when lockpick sends wait_ms, as etcd3.Lock does: after a try that
found the key taken, it watches the key and tries again as soon as it
changes (the holder's release, its lease's end), until the wait is over. With --renew it keeps each lease alive (a LeaseKeepAlive every
third of the TTL) until it is released, and reports each renewal on a line
of its own. Declare them with --subject-caps. It hands out no fencing
tokens: a fenced request is answered with an error.

It does not use etcd3.Lock itself, which knows one member only and cannot
say what became of an acquire whose transaction got no answer: this one
talks to every member lockpick names (the request's etcd list), moving on
to the next one when a member does not answer, and resolves such an
acquire by revoking the lease it used: once the revoke is answered, the key
cannot be there (a late transaction with a revoked lease fails), so the
acquire surely failed. Like etcd3.Lock, it leaves the lease of a try that
found the key taken to expire. It imports nothing from lockpick.
"""

import argparse
import json
import sys
import threading
import time
import uuid

import etcd3
import etcd3.etcdrpc as etcdrpc
import etcd3.exceptions as eexc
import grpc

PREFIX = "/locks/"  # etcd3.Lock's
WATCH_S = 0.5  # how long a blocking acquire watches the key before it tries anyway
RPC_S = 1.0  # the longest one call may take


class NotHeld(Exception):
    """The lease or the key is gone: the lock said no."""


class Members:
    """A client per etcd member, and the one to ask next.

    A call that gets no answer moves on to the next member: its own answer
    is unknown, but the next call goes elsewhere.
    """

    def __init__(self, addrs):
        self.addrs = addrs
        self.clients = {}
        self.cur = 0

    def client(self, timeout):
        addr = self.addrs[self.cur % len(self.addrs)]
        c = self.clients.get(addr)
        if c is None:
            host, port = addr.rsplit(":", 1)
            c = etcd3.client(host=host, port=int(port))
            self.clients[addr] = c
        c.timeout = max(min(timeout, RPC_S), 0.01)
        return c

    def failed(self):
        self.cur += 1


# The gRPC codes of a call that may have run: no answer, or etcd's own
# "request timed out", "leader changed", "no leader" (UNAVAILABLE).
NO_ANSWER = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED,
             grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL}


def transport_error(e):
    """Whether e is a call that got no answer from etcd (it may have run)."""
    if isinstance(e, (eexc.ConnectionFailedError, eexc.ConnectionTimeoutError, eexc.InternalServerError)):
        return True
    return isinstance(e, grpc.RpcError) and e.code() in NO_ANSWER


def describe(e):
    cause = e.__context__ if isinstance(e, eexc.Etcd3Exception) and e.__context__ else e
    if isinstance(cause, grpc.RpcError):
        return "%s: %s" % (cause.code().name, cause.details())
    return "%s: %s" % (type(e).__name__, e)


class Out:
    """Whole lines on stdout, from the main loop and the renewers."""

    def __init__(self):
        self.mu = threading.Lock()

    def write(self, obj):
        with self.mu:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()


class Renewer(threading.Thread):
    """Keeps one lease alive until stopped, reporting each renewal.

    It gives the lease up, and says so, when etcd says the lease is gone,
    or when keep-alives got no answer until the next could not land before
    the lease's deadline.
    """

    def __init__(self, addrs, token, lease_id, ttl_ms, deadline_ns, out):
        super().__init__(daemon=True)
        self.members = Members(addrs)  # its own clients: timeouts are per client
        self.token, self.lease_id, self.ttl_ms = token, lease_id, ttl_ms
        self.deadline_ns, self.out = deadline_ns, out
        self.quit = threading.Event()

    def run(self):
        try:
            self.renew()
        finally:
            for c in self.members.clients.values():
                c.close()

    def renew(self):
        every = self.ttl_ms / 3000.0
        while not self.quit.wait(every):
            at = time.monotonic_ns()  # CLOCK_MONOTONIC, the history's clock
            left = (self.deadline_ns - at) / 1e9
            try:
                c = self.members.client(min(every, left))
                resp = list(c.refresh_lease(self.lease_id))
                ttl_s = resp[0].TTL if resp else 0
                if ttl_s <= 0:
                    raise NotHeld("lease expired")
                # etcd counts the lease's TTL from when it got the keep-alive.
                valid_ms = min(ttl_s * 1000, self.ttl_ms)
                self.deadline_ns = at + valid_ms * 1_000_000
                note = {"token": self.token, "valid_ms": valid_ms, "at_mono_ns": at}
            except NotHeld as e:
                note = {"token": self.token, "ok": False, "error": str(e)}
            except Exception as e:  # no answer: the keep-alive may have landed
                self.members.failed()
                if time.monotonic_ns() + every * 1e9 < self.deadline_ns:
                    continue  # the next one may still land in time
                note = {"token": self.token, "ok": False, "unknown": True, "error": "keep-alive: " + describe(e)}
            if self.quit.is_set():
                return  # released meanwhile: lockpick no longer asks
            self.out.write({"renewed": note})
            if note.get("ok") is False:
                return


class Locker:
    def __init__(self, args):
        self.args = args
        self.out = Out()
        self.members = None
        self.held = {}  # token -> (lease id, Renewer or None)

    def serve(self):
        for line in sys.stdin:
            req = json.loads(line)
            if self.members is None:
                self.members = Members(req.get("etcd") or [req["master"]])
            try:
                reply = self.handle(req)
            except NotHeld as e:
                reply = {"ok": False, "error": str(e)}
            except Exception as e:
                if transport_error(e):
                    # No answer (a killed member, a partition, a pause): the
                    # call may have run, so the outcome is unknown.
                    self.members.failed()
                    reply = {"ok": False, "unknown": True, "error": describe(e)}
                elif isinstance(e, grpc.RpcError):
                    # etcd's answer (a lease not found, ...): nothing changed.
                    reply = {"ok": False, "error": "etcd: " + describe(e)}
                else:
                    reply = {"ok": False, "unknown": True, "error": describe(e)}
            reply["id"] = req["id"]
            self.out.write(reply)

    def handle(self, req):
        started = time.monotonic()
        end = started + req["timeout_ms"] / 1000.0
        op = req["op"]
        if op == "hello":
            self.members.client(end - time.monotonic()).status()  # warm up: the first call costs the most
            return {"ok": True}
        if op == "acquire":
            if req.get("fenced"):
                return {"ok": False, "error": "pyetcdlock hands out no fencing tokens"}
            wait = req.get("wait_ms", 0) / 1000.0 if self.args.block else 0
            return self.acquire(req, started, end, wait)
        if op == "release":
            return self.release(req, end)
        return {"ok": False, "error": "unsupported op " + op}

    def acquire(self, req, started, end, wait):
        key, token = PREFIX + req["key"], uuid.uuid4().hex
        ttl_s = max(req["ttl_ms"] // 1000, 1)  # etcd leases have whole seconds
        while True:
            sent = time.monotonic()
            at = time.monotonic_ns()
            c = self.members.client(end - sent)
            try:
                lease = c.lease(ttl_s)
            except Exception as e:
                # No lease, so no key: surely not acquired.
                if not transport_error(e):
                    raise
                self.members.failed()
                lease, why = None, "no lease: " + describe(e)
            rev = None  # the revision of the key found taken
            if lease is not None:
                try:
                    ok, got = c.transaction(compare=[c.transactions.create(key) == 0],
                                            success=[c.transactions.put(key, token, lease=lease.id)],
                                            failure=[c.transactions.get(key)])
                    if not ok and got and got[0]:
                        rev = got[0][0][1].mod_revision
                except Exception as e:
                    if not transport_error(e):
                        raise
                    self.members.failed()
                    self.revoke(lease.id, end, e)  # raises unless the key surely is not there
                    ok, why = False, "no answer, lease revoked: " + describe(e)
                else:
                    why = "taken"  # its lease, without a key, expires by itself
                if ok:
                    valid_ms = min(lease.ttl * 1000, req["ttl_ms"])
                    renewer = None
                    if self.args.renew:
                        renewer = Renewer(self.members.addrs, token, lease.id, valid_ms, at + valid_ms * 1_000_000, self.out)
                        renewer.start()
                    self.held[token] = (lease.id, renewer)
                    # The lease runs from before its grant was sent; less the
                    # time the calls took.
                    return {"ok": True, "token": token,
                            "valid_ms": int(valid_ms + (sent - started) * 1000 - (time.monotonic() - sent) * 1000)}
            left = started + wait - time.monotonic()
            if left <= 0:
                if wait > 0 and why == "taken":
                    why = "timed out waiting"
                return {"ok": False, "error": why}
            self.await_change(key, rev, min(left, WATCH_S))

    def await_change(self, key, rev, timeout):
        """Waits until key changes after revision rev (any change if rev is
        None), for at most timeout seconds; a member that does not answer
        ends the wait early. One watch stream per wait: python-etcd3's own
        watcher thread reconnects in a busy loop to a member that is down."""
        if rev is None:
            time.sleep(min(timeout, 0.025))
            return
        c = self.members.client(timeout)
        done = threading.Event()

        def requests():
            yield etcdrpc.WatchRequest(create_request=etcdrpc.WatchCreateRequest(key=key.encode(), start_revision=rev + 1))
            done.wait(timeout)  # a closed request stream would end the watch

        call = etcdrpc.WatchStub(c.channel).Watch(requests(), timeout)
        try:
            for resp in call:
                if resp.events or resp.canceled:
                    return
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                self.members.failed()
                time.sleep(min(timeout, 0.025))
        finally:
            done.set()
            call.cancel()

    def revoke(self, lease_id, end, cause):
        """Revokes the lease of a transaction that got no answer (cause), on
        the next member; raises, outcome unknown, if the revoke is not
        answered either: the lease's key may then be there."""
        try:
            self.members.client(end - time.monotonic()).revoke_lease(lease_id)
        except Exception as e:
            if transport_error(e):
                self.members.failed()
            if not isinstance(e, grpc.RpcError) or e.code() != grpc.StatusCode.NOT_FOUND:
                raise RuntimeError("%s; revoking its lease: %s" % (describe(cause), describe(e)))
            # NOT_FOUND: the lease is gone, and its key with it.

    def release(self, req, end):
        key, token = PREFIX + req["key"], req["token"]
        _, renewer = self.held.pop(token, (None, None))
        if renewer is not None:
            renewer.quit.set()  # no renewal after the release
        unsure = None
        for _ in range(2):  # a second try, on the next member, if the first got no answer
            c = self.members.client((end - time.monotonic()) / 2)
            try:
                ok, _ = c.transaction(compare=[c.transactions.value(key) == token],
                                      success=[c.transactions.delete(key)], failure=[])
            except Exception as e:
                if not transport_error(e):
                    raise
                self.members.failed()
                unsure = e
                continue
            if ok:
                return {"ok": True}
            if unsure is not None:
                # The first try may have deleted it.
                return {"ok": False, "unknown": True, "error": "not held after a try that got no answer: " + describe(unsure)}
            raise NotHeld("not held")
        raise unsure


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--block", action="store_true", help="wait for the lock, up to the request's wait_ms (declare block)")
    p.add_argument("--renew", action="store_true", help="keep each lease alive until released, reporting each renewal (declare renew)")
    Locker(p.parse_args()).serve()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
