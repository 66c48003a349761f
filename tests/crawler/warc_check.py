#!/usr/bin/env python3
"""Independent WARC 1.1 reader for the writer's tests (stdlib only).

Usage: warc_check.py DIR
Reads every *.warc.gz in DIR, checks that each file is a sequence of gzip
members holding exactly one record each, that the first record is warcinfo,
that Content-Length matches the block, that WARC-Block-Digest and
WARC-Payload-Digest (sha1, base32) verify, that every response's HTTP
message reads strictly (a status line, header fields that are tokens and
CRLF lines, a body framed as its headers say: a Transfer-Encoding body is
de-chunked, a Content-Length matches the body unless WARC-Truncated, a gzip
Content-Encoding inflates) and its WARC-Payload-Digest is over the entity
body (transfer coding removed, content coding kept), that request/response records
point at each other with WARC-Concurrent-To, and that revisits refer to a
response seen earlier (their Refers-To-Target-URI and -Date its own), and
that request/response/revisit records name their protocol (WARC-Protocol
h2 or http/1.1) and carry an HTTP/1.1 message either way (h2 counts the h2 records). Prints one summary line and
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


TCHAR = set(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def http_fields(head, rid):
    """The header lines of an HTTP message head (after its start line) as
    (lowercase name, value) pairs; raises on anything but token: value."""
    out = []
    for line in head.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or any(ch not in TCHAR for ch in name):
            raise ValueError("bad HTTP header line %r in %s" % (line[:60], rid))
        if b"\r" in value or b"\n" in value:
            raise ValueError("bare CR or LF in a header of %s" % rid)
        out.append((name.decode().lower(), value.strip().decode("latin-1")))
    return out


def dechunk(body, rid):
    """The body of a chunked message, strictly (RFC 9112 7.1)."""
    out, pos = bytearray(), 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            raise ValueError("chunk size line without CRLF in %s" % rid)
        size_s = body[pos:eol].split(b";", 1)[0].strip()
        if not size_s or any(ch not in b"0123456789abcdefABCDEF" for ch in size_s):
            raise ValueError("bad chunk size %r in %s" % (body[pos:eol][:40], rid))
        size, pos = int(size_s, 16), eol + 2
        if size == 0:
            break
        if body[pos + size:pos + size + 2] != b"\r\n":
            raise ValueError("chunk of %d bytes not followed by CRLF in %s" % (size, rid))
        out += body[pos:pos + size]
        pos += size + 2
    while True:  # trailer fields, then the final CRLF
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            raise ValueError("chunked body without its final CRLF in %s" % rid)
        if eol == pos:
            break
        pos = eol + 2
    if eol + 2 != len(body):
        raise ValueError("%d bytes after the last chunk in %s" % (len(body) - eol - 2, rid))
    return bytes(out)


def check_http_response(fields, block, counts):
    """A response record's HTTP message, read as a strict reader would;
    returns the entity body."""
    rid = fields["warc-record-id"]
    sep = block.find(b"\r\n\r\n")
    if sep < 0:
        raise ValueError("no HTTP header end in %s" % rid)
    head, body = block[:sep], block[sep + 4:]
    status = head.split(b"\r\n", 1)[0].split(b" ")
    if len(status) < 2 or len(status[1]) != 3 or not status[1].isdigit():
        raise ValueError("bad status line in %s" % rid)
    hf = http_fields(head, rid)
    te = [v for n, v in hf if n == "transfer-encoding"]
    cl = [v for n, v in hf if n == "content-length"]
    ce = ",".join(v for n, v in hf if n == "content-encoding").replace(" ", "").lower()
    truncated = fields.get("warc-truncated") is not None
    counts["x-transfer-encoding"] += any(n == "x-crawler-transfer-encoding" for n, v in hf)
    if te:
        if te[-1].split(",")[-1].strip().lower() != "chunked":
            raise ValueError("Transfer-Encoding %r does not end in chunked in %s" % (te, rid))
        if cl:
            raise ValueError("both Transfer-Encoding and Content-Length in %s" % rid)
        counts["chunked"] += 1
        if not truncated:
            body = dechunk(body, rid)
    elif cl:
        if len(set(cl)) != 1 or not cl[0].isdigit():
            raise ValueError("bad Content-Length %r in %s" % (cl, rid))
        n = int(cl[0])
        if len(body) > n or (len(body) < n and not truncated):
            raise ValueError("Content-Length %d, body %d bytes in %s" % (n, len(body), rid))
    if ce in ("gzip", "x-gzip"):
        counts["gzip"] += 1
        if not truncated:
            zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body)
    elif ce == "br":
        counts["br"] += 1
    return body


def main():
    files = sorted(glob.glob(os.path.join(sys.argv[1], "*.warc.gz")))
    counts = {"files": len(files), "records": 0, "warcinfo": 0, "request": 0,
              "response": 0, "revisit": 0, "truncated": 0, "h2": 0, "chunked": 0,
              "x-transfer-encoding": 0, "gzip": 0, "br": 0}
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
                    payload = check_http_response(fields, block, counts)
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
                                   fields["warc-payload-digest"],
                                   fields.get("warc-refers-to-target-uri"),
                                   fields.get("warc-refers-to-date")))
            if "warc-concurrent-to" in fields:
                concurrent.append((rid, fields["warc-concurrent-to"]))
    for rid, other in concurrent:
        if other not in ids:
            raise ValueError("Concurrent-To points nowhere: %s" % other)
    for rid, target, digest, uri, date in refers:
        if target not in ids or ids[target][0] != "response":
            raise ValueError("Refers-To points nowhere")
        original = ids[target][1]
        if original["warc-payload-digest"] != digest:
            raise ValueError("revisit digest differs from original")
        if uri is not None and uri != original["warc-target-uri"]:
            raise ValueError("revisit %s: WARC-Refers-To-Target-URI is not its original's "
                             "WARC-Target-URI (%d bytes against %d)" %
                             (rid, len(uri), len(original["warc-target-uri"])))
        if date is not None and date != original["warc-date"]:
            raise ValueError("revisit %s: WARC-Refers-To-Date is not its original's" % rid)
    print(" ".join("%s=%d" % (k, counts.get(k, 0)) for k in
                   ("files", "records", "warcinfo", "request", "response",
                    "revisit", "truncated", "h2", "chunked", "x-transfer-encoding",
                    "gzip", "br")))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ValueError, KeyError, UnicodeDecodeError, zlib.error) as exc:
        print("FAIL: %s" % exc)
        sys.exit(1)
