#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fault-proxy - an HTTP proxy in front of a real gemmd that spoils chosen
answers, so that tests can drive a client through answers gemmd itself
never gives (tests/gemmctl-tune.test).  Every request goes on to gemmd
and gemmd's answer comes back, except for the first poll of a job
(GET /v1/jobs/ID?wait=...), which each RULE argument spoils for one job,
in the order the jobs are first polled:

  status:CODE   answer CODE with an empty body instead of asking gemmd
  state:NAME    ask gemmd without holding (wait=0), then answer its job
                with "state" NAME and no "reason" (a state from a newer
                gemmd, say)
  drop          close the connection without an answer (nor asking gemmd)
  polls_dropped the same to every poll of the job, not only its first
  pass          leave it alone

A RULE of drop_post:N spoils the Nth POST /v1/jobs that is not a dry run
(from 1) instead: gemmd gets it and makes the job, and the client gets
no answer, its connection closed, as when a network drops a reply.
drop_dry:N does the same to the Nth dry run.  fail_dry:N answers the
Nth dry run with a 500 and a gemmd-style error, without asking gemmd.
odd_post:N answers the Nth POST that is not a dry run with a 202 whose
body is not a job, without asking gemmd.  late_delete holds every
DELETE /v1/jobs/ID until gemmd's job ID has ended and only then hands
it on, as when a job ends in the moment the client cancels it.
drop_delete closes the connection of every DELETE without an answer
(nor asking gemmd): the client's cancel is lost and the job goes on.
no_key_query hands GET /v1/jobs?idempotency_key=KEY on without its
query, as a proxy that drops it would: gemmd answers with every job.

  fault-proxy.py UPSTREAM_URL PORT_FILE RULE...

It listens on a free port of 127.0.0.1, writes the port to PORT_FILE and
serves until killed.  Each spoiled answer is logged on stderr.
"""
import http.server
import json
import os
import re
import sys
import threading
import urllib.error
import urllib.request

POLL = re.compile(r"^/v1/jobs/([^/?]+)\?(.*&)?wait=")
HOP = ("connection", "keep-alive", "transfer-encoding", "content-length")


class Proxy(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream, rules):
        super().__init__(("127.0.0.1", 0), Handler)
        self.upstream = upstream.rstrip("/")
        self.late_delete = "late_delete" in rules
        self.drop_delete = "drop_delete" in rules
        self.no_key_query = "no_key_query" in rules
        self.rules = [r for r in rules
                      if not r.startswith(("drop_", "fail_dry:", "odd_post:",
                                           "late_delete", "no_key_query"))]
        self.drops = {r for r in rules
                      if r.startswith(("drop_", "fail_", "odd_"))}
        self.posts = {"drop_post": 0, "drop_dry": 0}
        self.polled = {}  # job id -> its rule, in first-poll order
        self.lock = threading.Lock()

    def rule_for(self, path):
        """The rule for this request, once: only a job's first poll."""
        m = POLL.match(path)
        if not m:
            return "pass"
        with self.lock:
            if m.group(1) in self.polled:
                rule = self.polled[m.group(1)]
                return "drop" if rule == "polls_dropped" else "pass"
            n = len(self.polled)
            rule = self.rules[n] if n < len(self.rules) else "pass"
            self.polled[m.group(1)] = rule
            return "drop" if rule == "polls_dropped" else rule


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def post_rule(self, body):
        """For a POST of a job: "drop" or "fail" where a rule spoils it."""
        if self.command != "POST" or not self.path.startswith("/v1/jobs"):
            return None
        try:
            kind = ("drop_dry" if json.loads(body or b"{}").get("dry_run")
                    else "drop_post")
        except ValueError:
            return None
        with self.server.lock:
            self.server.posts[kind] += 1
            n = self.server.posts[kind]
        if "%s:%d" % (kind, n) in self.server.drops:
            return "drop"
        if kind == "drop_dry" and "fail_dry:%d" % n in self.server.drops:
            return "fail"
        if kind == "drop_post" and "odd_post:%d" % n in self.server.drops:
            return "odd"
        return None

    def upstream(self, path, body):
        req = urllib.request.Request(self.server.upstream + path,
                                     data=body, method=self.command)
        for k in ("Content-Type", "Idempotency-Key"):
            if self.headers.get(k):
                req.add_header(k, self.headers[k])
        try:
            with urllib.request.urlopen(req, timeout=900) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def upstream_get(self, path):
        try:
            with urllib.request.urlopen(self.server.upstream + path,
                                        timeout=900) as r:
                r.read()
        except urllib.error.HTTPError:
            pass

    def answer(self, status, headers, body):
        self.send_response(status)
        for k, v in (headers or {}).items():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        post = self.post_rule(body)
        if post == "fail":
            print("fault-proxy: %s %s -> 500" % (self.command, self.path),
                  file=sys.stderr, flush=True)
            self.answer(500, {"Content-Type": "application/json"},
                        b'{"error": {"code": "internal", "message": '
                        b'"fault-proxy: failed on purpose", "field": null}}')
            return
        if post == "odd":
            print("fault-proxy: %s %s -> 202, not a job" %
                  (self.command, self.path), file=sys.stderr, flush=True)
            self.answer(202, {"Content-Type": "application/json"},
                        b'{"queued": true}')
            return
        if post == "drop":
            status, _, reply = self.upstream(self.path, body)
            job = json.loads(reply).get("id") if status < 300 else None
            print("fault-proxy: %s %s -> dropped (%d, job %s)" %
                  (self.command, self.path, status, job),
                  file=sys.stderr, flush=True)
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if self.command == "DELETE" and self.server.drop_delete:
            print("fault-proxy: %s %s -> dropped" % (self.command, self.path),
                  file=sys.stderr, flush=True)
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if self.command == "DELETE" and self.server.late_delete:
            self.upstream_get(self.path + "?wait=60")
            print("fault-proxy: %s %s -> held until the job ended" %
                  (self.command, self.path), file=sys.stderr, flush=True)
        if (self.server.no_key_query and self.command == "GET" and
                self.path.startswith("/v1/jobs?idempotency_key=")):
            print("fault-proxy: %s %s -> its query dropped" %
                  (self.command, self.path), file=sys.stderr, flush=True)
            self.path = "/v1/jobs"
        rule = self.server.rule_for(self.path)
        if rule == "drop":
            print("fault-proxy: %s %s -> dropped" % (self.command, self.path),
                  file=sys.stderr, flush=True)
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if rule.startswith("status:"):
            print("fault-proxy: %s %s -> %s" % (self.command, self.path,
                                                rule[7:]),
                  file=sys.stderr, flush=True)
            self.answer(int(rule[7:]), {}, b"")
            return
        path = self.path
        if rule.startswith("state:"):
            path = re.sub(r"wait=[0-9]+", "wait=0", path)
        status, headers, body = self.upstream(path, body)
        if rule.startswith("state:") and status == 200:
            job = json.loads(body)
            print("fault-proxy: %s %s: state %s -> %s" %
                  (self.command, self.path, job.get("state"), rule[6:]),
                  file=sys.stderr, flush=True)
            job["state"] = rule[6:]
            job["reason"] = None
            body = json.dumps(job).encode()
        self.answer(status, headers, body)

    do_GET = do_POST = do_DELETE = handle_any


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: fault-proxy.py UPSTREAM_URL PORT_FILE RULE...")
    proxy = Proxy(sys.argv[1], sys.argv[3:])
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write("%d\n" % proxy.server_address[1])
    # renamed into place, so a reader never sees half a port
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    proxy.serve_forever()


if __name__ == "__main__":
    main()
