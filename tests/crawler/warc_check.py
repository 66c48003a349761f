#!/usr/bin/env python3
"""Independent WARC 1.1 reader for the writer's tests (stdlib only).

Usage: warc_check.py DIR
Reads every *.warc.gz in DIR, checks that each file is a sequence of gzip
members holding exactly one record each, that the first record is warcinfo,
that Content-Length matches the block, that WARC-Block-Digest and
WARC-Payload-Digest (sha1, base32) verify, that request/response records
point at each other with WARC-Concurrent-To, and that revisits refer to a
response seen earlier, and that request/response/revisit records name
their protocol (WARC-Protocol h2 or http/1.1) and carry an HTTP/1.1
message either way (h2 counts the h2 records). Prints one summary line and
exits 0 when all holds.
"""
import base64
import glob
import hashlib
import os
import sys
import zlib


def sha1_label(data):
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def members(raw):
    pos = 0
    while pos < len(raw):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out = d.decompress(raw[pos:])
        if not d.eof:
            raise ValueError("gzip member cut at offset %d" % pos)
        used = len(raw) - pos - len(d.unused_data)
        yield pos, out
        pos += used


def parse_record(data):
    end = data.index(b"\r\n\r\n")
    head = data[:end].decode("utf-8")
    lines = head.split("\r\n")
    if lines[0] != "WARC/1.1":
        raise ValueError("bad version line %r" % lines[0])
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    length = int(fields["content-length"])
    block = data[end + 4:end + 4 + length]
    if len(block) != length:
        raise ValueError("short block")
    if data[end + 4 + length:] != b"\r\n\r\n":
        raise ValueError("record does not end with CRLF CRLF / extra bytes")
    return fields, block


def main():
    files = sorted(glob.glob(os.path.join(sys.argv[1], "*.warc.gz")))
    counts = {"files": len(files), "records": 0, "warcinfo": 0, "request": 0,
              "response": 0, "revisit": 0, "truncated": 0, "h2": 0}
    ids = {}
    concurrent = []
    refers = []
    for path in files:
        raw = open(path, "rb").read()
        for i, (offset, data) in enumerate(members(raw)):
            fields, block = parse_record(data)
            t = fields["warc-type"]
            counts["records"] += 1
            counts[t] = counts.get(t, 0) + 1
            if i == 0 and t != "warcinfo":
                raise ValueError("%s does not start with warcinfo" % path)
            rid = fields["warc-record-id"]
            if not (rid.startswith("<urn:uuid:") and rid.endswith(">")):
                raise ValueError("bad record id %s" % rid)
            if rid in ids:
                raise ValueError("duplicate record id")
            ids[rid] = (t, fields)
            if "warc-date" not in fields:
                raise ValueError("no WARC-Date")
            if t == "warcinfo":
                continue
            if fields.get("warc-block-digest") != sha1_label(block):
                raise ValueError("block digest mismatch in %s" % rid)
            if t in ("request", "response", "revisit"):
                proto = fields.get("warc-protocol")
                if proto not in ("h2", "http/1.1"):
                    raise ValueError("bad WARC-Protocol %r in %s" % (proto, rid))
                counts["h2"] += proto == "h2"
                first = block.split(b"\r\n", 1)[0]
                ok = (first.endswith(b" HTTP/1.1") if t == "request" else
                      first.startswith(b"HTTP/1.1 ") or first.startswith(b"HTTP/1.0 "))
                if not ok:
                    raise ValueError("%s record %s is not HTTP/1.x: %r" % (t, rid, first))
            if t in ("response", "revisit"):
                if not fields["content-type"].startswith("application/http; msgtype=response"):
                    raise ValueError("bad content-type")
                sep = block.find(b"\r\n\r\n")
                if sep < 0:
                    raise ValueError("no HTTP header end")
                payload = block[sep + 4:]
                if t == "response":
                    if fields.get("warc-payload-digest") != sha1_label(payload):
                        raise ValueError("payload digest mismatch in %s" % rid)
                    if fields.get("warc-truncated") == "length":
                        counts["truncated"] += 1
                else:
                    if payload:
                        raise ValueError("revisit with payload")
                    if not fields.get("warc-profile", "").endswith("identical-payload-digest"):
                        raise ValueError("bad revisit profile")
                    refers.append((rid, fields["warc-refers-to"],
                                   fields["warc-payload-digest"]))
            if "warc-concurrent-to" in fields:
                concurrent.append((rid, fields["warc-concurrent-to"]))
    for rid, other in concurrent:
        if other not in ids:
            raise ValueError("Concurrent-To points nowhere: %s" % other)
    for rid, target, digest in refers:
        if target not in ids or ids[target][0] != "response":
            raise ValueError("Refers-To points nowhere")
        if ids[target][1]["warc-payload-digest"] != digest:
            raise ValueError("revisit digest differs from original")
    print(" ".join("%s=%d" % (k, counts.get(k, 0)) for k in
                   ("files", "records", "warcinfo", "request", "response",
                    "revisit", "truncated", "h2")))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ValueError, KeyError, UnicodeDecodeError, zlib.error) as exc:
        print("FAIL: %s" % exc)
        sys.exit(1)
