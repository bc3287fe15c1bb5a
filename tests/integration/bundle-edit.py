#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# bundle-edit.py IN OUT EXPR: copy bundle IN to OUT with its manifest
# changed by the Python expression EXPR, evaluated with `m` bound to the
# manifest (a dict) and `member(name)` to the members[] entry of a name.
# Every other tar entry is copied byte for byte, in order, manifest last:
# a hostile bundle our writer would refuse to make.
import io
import json
import sys
import tarfile

src, dst, expr = sys.argv[1:4]
with tarfile.open(src) as t:
    entries = [(e, t.extractfile(e).read()) for e in t.getmembers()]
m = json.loads(dict((e.name, d) for e, d in entries)["manifest.json"])


def member(name):
    return next(x for x in m["members"] if x["name"] == name)


exec(expr, {"m": m, "member": member})
with tarfile.open(dst, "w", format=tarfile.PAX_FORMAT) as out:
    for e, d in entries:
        if e.name == "manifest.json":
            d = json.dumps(m).encode()
            e.size = len(d)
        out.addfile(e, io.BytesIO(d))
