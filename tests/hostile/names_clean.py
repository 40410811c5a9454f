"""Checks that every name in a profile is clean, as lib/base/name.h defines it.

    names_clean.py FORMAT FILE [TOTAL]
    names_clean.py --each FORMAT=FILE...

FORMAT is what cpa-query or cpa-render wrote: folded, text, svg, html,
speedscope or pprof. Every name in the file (every frame of a folded
line, every line of text, every text node and attribute of SVG and HTML,
every frame of speedscope, every string of pprof's string table) must be
valid UTF-8 without control characters (C0, DEL, C1), U+2028, U+2029 or
bidirectional controls, and no folded frame may contain a line end. A
folded file must be lines of "STACK COUNT" whose counts sum to TOTAL when
given. Prints each offending name and exits 1; exits 0 when all are clean.
"""
import gzip
import json
import re
import sys
import xml.etree.ElementTree as ET

HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
bad = []


def check(name, where):
    if HIDDEN.search(name):
        bad.append("%s: %r" % (where, name))


def text_of(data, where):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        bad.append("%s: not UTF-8 at byte %d" % (where, e.start))
        return data.decode("utf-8", "replace")


def folded(data, total):
    lines = text_of(data, "file").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    s = 0
    for i, line in enumerate(lines, 1):
        m = re.fullmatch(r"(.*\S) ([0-9]+)", line)
        if not m:
            bad.append("line %d: not STACK COUNT: %r" % (i, line))
            continue
        s += int(m.group(2))
        for f in m.group(1).split(";"):
            check(f, "line %d" % i)
    if total is not None and s != total:
        bad.append("counts sum to %d, not %d" % (s, total))


def text(data):
    for i, line in enumerate(text_of(data, "file").split("\n"), 1):
        check(line, "line %d" % i)


def markup(data, html):
    t = text_of(data, "file")
    if html:
        # the data and script of the page, not its markup, hold names
        for m in re.finditer(r"<script[^>]*>(.*?)</script>", t, re.S):
            check(m.group(1).replace("\n", " ").replace("\t", " "), "script")
        t = re.sub(r"<script[^>]*>.*?</script>", "", t, flags=re.S)
        check(t.replace("\n", " ").replace("\t", " "), "page")
        return
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        bad.append("not XML: %s" % e)
        return
    for el in root.iter():
        for k, v in el.attrib.items():
            check(v, "attribute %s" % k)
        for s in (el.text, el.tail):
            if s:
                check(s.replace("\n", " ").replace("\t", " "), "text")


def speedscope(data):
    try:
        doc = json.loads(text_of(data, "file"))
    except ValueError as e:
        bad.append("not JSON: %s" % e)
        return
    for f in doc["shared"]["frames"]:
        check(f["name"], "frame")
    for p in doc["profiles"]:
        check(p.get("name", ""), "profile")


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def pprof(data):
    """profile.proto's string_table: field 6 of Profile, all strings."""
    b = gzip.decompress(data)
    i = n = 0
    while i < len(b):
        key, i = varint(b, i)
        wire = key & 7
        if wire == 0:
            _, i = varint(b, i)
        elif wire == 2:
            ln, i = varint(b, i)
            if key >> 3 == 6:
                check(text_of(b[i:i + ln], "string %d" % n), "string %d" % n)
                n += 1
            i += ln
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            bad.append("not a profile: wire type %d at %d" % (wire, i))
            return
    if n == 0:
        bad.append("no string table")


def check_file(fmt, path, total):
    data = open(path, "rb").read()
    if fmt == "folded":
        folded(data, total)
    elif fmt == "text":
        text(data)
    elif fmt in ("svg", "html"):
        markup(data, fmt == "html")
    elif fmt == "speedscope":
        speedscope(data)
    elif fmt == "pprof":
        pprof(data)
    else:
        sys.exit("names_clean.py: unknown format %s" % fmt)
    for b in bad[:20]:
        print("%s (%s): %s" % (path, fmt, b))
    return not bad


def main():
    if sys.argv[1] == "--each":
        # one interpreter for several files: it starts slowly on a
        # loaded host
        ok = True
        for arg in sys.argv[2:]:
            fmt, path = arg.split("=", 1)
            del bad[:]
            ok = check_file(fmt, path, None) and ok
        sys.exit(0 if ok else 1)
    total = int(sys.argv[3]) if len(sys.argv) > 3 else None
    sys.exit(0 if check_file(sys.argv[1], sys.argv[2], total) else 1)


main()
