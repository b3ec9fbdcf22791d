#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sl_htmlcheck: what test_html_report.sh asks of a page, a browser's net log and a screenshot,
judged with the standard library only (html.parser, json, zlib), sharing no code with sluice.

  sl_htmlcheck.py static PAGE     exit 1, naming each, if the page holds anything that runs or
                                  fetches: a script, frame, object, embed, link, img, base,
                                  form, media element, an on* attribute, a URL-bearing attribute
                                  (src, href, action, ...), a URL in any tag or in the CSS,
                                  url( or @import in CSS, a comment or declaration; or lacks
                                  the no-fetch CSP meta (a URL in text is text: no reference)
  sl_htmlcheck.py text PAGE       the page's text as a browser shows it (one line per element)
  sl_htmlcheck.py verdict PAGE    the class and text of the element with id="verdict"
  sl_htmlcheck.py elements PAGE   the tag names of the page's elements, one per line
  sl_htmlcheck.py net NETLOG      the URLs the page asked for (Chromium --log-net-log: requests
                                  with an initiator, not the browser's own), file: ones left out
  sl_htmlcheck.py png FILE        "W H distinct red": size, distinct colours (up to 4096), and
                                  pixels of the report's red (r > 160, g < 60, b < 60), in the
                                  top 400 rows
"""
import html.parser
import json
import re
import struct
import sys
import zlib

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
BANNED = {"script", "iframe", "frame", "frameset", "object", "embed", "link", "img", "base",
          "form", "audio", "video", "source", "track", "picture", "portal", "applet", "image",
          "use", "foreignobject", "animate", "set", "feimage"}
URL_ATTRS = {"src", "href", "action", "formaction", "xlink:href", "poster", "data", "srcset",
             "background", "ping", "codebase", "manifest", "cite", "longdesc", "usemap"}


# a scheme with an authority, or a network-path reference
URL = re.compile(r"[a-z][a-z0-9+.-]*:\s*//|(^|[\s\"'=(,])//[^\s/]", re.I)


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems, self.elements, self.text, self.csp = [], [], [], False
        self.stack, self.verdict_depth, self.verdict_class, self.verdict = [], None, None, []
        self.style = []

    def handle_starttag(self, tag, attrs):
        self.elements.append(tag)
        raw = self.get_starttag_text() or ""
        if URL.search(raw):
            self.problems.append("a URL in the tag %r" % raw[:120])
        a = dict(attrs)
        if tag in BANNED:
            self.problems.append("element <%s>" % tag)
        for k, v in attrs:
            if k.startswith("on"):
                self.problems.append("attribute %s on <%s>" % (k, tag))
            if k in URL_ATTRS:
                self.problems.append("attribute %s=%r on <%s>" % (k, v, tag))
            if k == "style" and v and re.search(r"url\s*\(|@import|expression", v, re.I):
                self.problems.append("style attribute %r" % v)
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp = a.get("content") == CSP
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "refresh":
            self.problems.append("meta refresh")
        if tag not in ("meta", "br", "rect", "line", "hr", "input"):
            self.stack.append(tag)
        if a.get("id") == "verdict":
            self.verdict_depth, self.verdict_class = len(self.stack), a.get("class")

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack and self.stack.pop() != tag:
                pass
        if self.verdict_depth is not None and len(self.stack) < self.verdict_depth:
            self.verdict_depth = None

    def handle_comment(self, data):
        self.problems.append("a comment %r" % data[:80])

    def handle_decl(self, decl):
        if decl.lower() != "doctype html":
            self.problems.append("a declaration %r" % decl[:80])

    def handle_pi(self, data):
        self.problems.append("a processing instruction %r" % data[:80])

    def unknown_decl(self, data):
        self.problems.append("a declaration %r" % data[:80])

    def handle_data(self, data):
        if self.stack and self.stack[-1] == "style":
            self.style.append(data)
            return
        self.text.append(data)
        if self.verdict_depth is not None:
            self.verdict.append(data)


def parse(path):
    raw = open(path, "rb").read()
    p = Page()
    p.feed(raw.decode("utf-8"))  # invalid UTF-8 in the page is itself a failure
    p.close()
    p.raw = raw
    return p


def cmd_static(path):
    p = parse(path)
    probs = list(p.problems)
    if not p.csp:
        probs.append("no Content-Security-Policy meta with %r" % CSP)
    css = "".join(p.style)
    if re.search(r"url\s*\(|@import|@font-face|expression", css, re.I):
        probs.append("CSS that fetches: %r" % css[:200])
    if URL.search(css):
        probs.append("a URL in the CSS")
    for pr in probs:
        print(pr)
    return 1 if probs else 0


def cmd_text(path):
    print("\n".join(t for t in parse(path).text if t.strip()))
    return 0


def cmd_verdict(path):
    p = parse(path)
    cls = [c for c in (p.verdict_class or "").split() if c != "verdict"]
    print("%s\t%s" % (" ".join(cls), " ".join("".join(p.verdict).split())))
    return 0


def cmd_elements(path):
    print("\n".join(parse(path).elements))
    return 0


def cmd_net(path):
    d = json.load(open(path))
    urls, page = {}, set()
    for e in d.get("events", []):
        p = e.get("params") or {}
        src = (e.get("source") or {}).get("id")
        if "url" in p:
            urls.setdefault(src, set()).add(p["url"])
        # the browser's own requests (updates, time) have no origin; a page's have one
        if "initiator" in p and p["initiator"] != "not an origin":
            page.add(src)
    for u in sorted({u for s in page for u in urls.get(s, ()) if not u.startswith("file:")}):
        print(u)
    return 0


def cmd_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        print("not a PNG")
        return 1
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    if depth != 8 or ctype not in (2, 6):
        print("unsupported PNG: depth %d colour type %d" % (depth, ctype))
        return 1
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    prev, colours, red, i = bytearray(stride), set(), 0, 0
    # the top of the page is enough to judge, and pure Python is slow on a whole screen
    for _ in range(min(h, 400)):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            px = bytes(line[x:x + 3])
            if len(colours) < 4096:
                colours.add(px)
            if px[0] > 160 and px[1] < 60 and px[2] < 60:
                red += 1
        prev = line
    print(w, h, len(colours), red)
    return 0


if __name__ == "__main__":
    cmds = {"static": cmd_static, "text": cmd_text, "verdict": cmd_verdict,
            "elements": cmd_elements, "net": cmd_net, "png": cmd_png}
    if len(sys.argv) != 3 or sys.argv[1] not in cmds:
        sys.stderr.write(__doc__)
        sys.exit(2)
    sys.exit(cmds[sys.argv[1]](sys.argv[2]))
