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
  pass          leave it alone

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
        self.rules = list(rules)
        self.polled = {}  # job id -> its rule, in first-poll order
        self.lock = threading.Lock()

    def rule_for(self, path):
        """The rule for this request, once: only a job's first poll."""
        m = POLL.match(path)
        if not m:
            return "pass"
        with self.lock:
            if m.group(1) in self.polled:
                return "pass"
            n = len(self.polled)
            rule = self.rules[n] if n < len(self.rules) else "pass"
            self.polled[m.group(1)] = rule
            return rule


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def upstream(self, path):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        req = urllib.request.Request(self.server.upstream + path,
                                     data=body, method=self.command)
        if self.headers.get("Content-Type"):
            req.add_header("Content-Type", self.headers["Content-Type"])
        try:
            with urllib.request.urlopen(req, timeout=900) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def answer(self, status, headers, body):
        self.send_response(status)
        for k, v in (headers or {}).items():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        rule = self.server.rule_for(self.path)
        if rule.startswith("status:"):
            n = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(n)
            print("fault-proxy: %s %s -> %s" % (self.command, self.path,
                                                rule[7:]),
                  file=sys.stderr, flush=True)
            self.answer(int(rule[7:]), {}, b"")
            return
        path = self.path
        if rule.startswith("state:"):
            path = re.sub(r"wait=[0-9]+", "wait=0", path)
        status, headers, body = self.upstream(path)
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
