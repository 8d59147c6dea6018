#!/usr/bin/env python3
"""Check a Prometheus text exposition (format 0.0.4) read from stdin,
strictly, and print its samples as JSON: {"name{label=value,...}": value}.

Every sample line must parse, belong to a family whose HELP and TYPE
lines came first, carry only well-formed, escaped label values and a
finite number; a counter's name must end in _total; no series may appear
twice, and a family's lines stand together, with one TYPE.  The exit
status is 1, with the reason, otherwise."""
import json
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(r"^(%s)(\{(%s(?:,%s)*)\})? (\S+)$" % (NAME, LABEL, LABEL))


def fail(why):
    sys.exit("metrics: " + why)


def main():
    text = sys.stdin.read()
    if not text.endswith("\n"):
        fail("no newline at the end")
    helps, types, samples = set(), {}, {}
    # the family of the lines so far, and those already ended
    family, ended = None, set()

    def enter(n, name):
        nonlocal family
        if name == family:
            return
        if name in ended:
            fail("line %d: %s again, after other families" % (n, name))
        if family is not None:
            ended.add(family)
        family = name

    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            name = line.split(" ")[2]
            if name in helps:
                fail("line %d: HELP for %s again" % (n, name))
            doc = line.split(" ", 3)[3] if line.count(" ") >= 3 else ""
            if not re.fullmatch(r"(?:[^\\]|\\[\\n])*", doc):
                fail("line %d: bad escape in HELP: %r" % (n, line))
            enter(n, name)
            helps.add(name)
        elif line.startswith("# TYPE "):
            parts = line.split(" ")
            if len(parts) != 4 or parts[3] not in ("gauge", "counter"):
                fail("line %d: bad TYPE: %r" % (n, line))
            if parts[3] == "counter" and not parts[2].endswith("_total"):
                fail("line %d: counter %s without _total" % (n, parts[2]))
            if parts[2] in types:
                fail("line %d: TYPE for %s again" % (n, parts[2]))
            enter(n, parts[2])
            types[parts[2]] = parts[3]
        else:
            m = SAMPLE.match(line)
            if not m:
                fail("line %d: not a sample: %r" % (n, line))
            name = m.group(1)
            if name not in helps or name not in types:
                fail("line %d: %s before its HELP and TYPE" % (n, name))
            enter(n, name)
            labels = re.findall(LABEL, m.group(3) or "")
            value = float(m.group(m.lastindex))
            if not math.isfinite(value):
                fail("line %d: %r" % (n, line))
            key = name + "{" + ",".join("%s=%s" % (k, v) for k, v in labels) + "}"
            if key in samples:
                fail("line %d: %s twice" % (n, key))
            samples[key] = value
    json.dump(samples, sys.stdout, sort_keys=True)
    print()


main()
