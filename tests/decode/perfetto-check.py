#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check a trace from `ptctl decode --format=perfetto` against Perfetto's schema.

Reads the protobuf wire format on its own (not with our .proto or the
generated C), with the fields of each message taken from Perfetto's
repository (github.com/google/perfetto, protos/perfetto/trace/, files named
below), and checks:
  * every field we meet is in Perfetto's schema, with its wire type, and
    enums hold values the schema defines;
  * the packet sequence: the first packet clears the incremental state, the
    later ones say they need it; every interned name is defined once, before
    it is used; every event's track was described; counters go to counter
    tracks only, slices and instants never do; thread tracks hang below the
    process track of their pid;
  * nesting: on every track, in time order (file order among equal times, as
    trace_processor sorts), each SLICE_END closes an open slice and nothing
    stays open; slices marked reconstructed=true are outermost;
  * with --calls FILE (`ptctl decode --format=calls --sort=time` of the same
    input and filters): per thread, the call slices, in order, have the
    names and depths of the calls' "->" lines;
  * with --max-packet-bytes B: the file is at most B bytes per TracePacket
    on average (names interned, times as deltas: a slice's begin or end is
    a packet of about 16 bytes); with --trace-bytes N the summary also
    gives the file's size against the trace it decodes.

Prints a one-line summary; exits 1 with the first problem.
"""

import argparse
import re
import sys

VARINT, I64, LEN, I32 = 0, 1, 2, 5

# name: {field number: (field name, wire type, message type or enum values or None)}
SCHEMA = {
    # protos/perfetto/trace/trace.proto
    "Trace": {1: ("packet", LEN, "TracePacket")},
    # protos/perfetto/trace/trace_packet.proto
    "TracePacket": {
        6: ("clock_snapshot", LEN, "ClockSnapshot"),
        8: ("timestamp", VARINT, None),
        10: ("trusted_packet_sequence_id", VARINT, None),
        11: ("track_event", LEN, "TrackEvent"),
        12: ("interned_data", LEN, "InternedData"),
        13: ("sequence_flags", VARINT, {0, 1, 2}),  # SequenceFlags, a bit set of 1 | 2
        58: ("timestamp_clock_id", VARINT, None),
        59: ("trace_packet_defaults", LEN, "TracePacketDefaults"),
        60: ("track_descriptor", LEN, "TrackDescriptor"),
    },
    # protos/perfetto/trace/trace_packet_defaults.proto
    "TracePacketDefaults": {58: ("timestamp_clock_id", VARINT, None), 11: ("track_event_defaults", LEN, None)},
    # protos/perfetto/trace/clock_snapshot.proto
    "ClockSnapshot": {1: ("clocks", LEN, "Clock"), 2: ("primary_trace_clock", VARINT, None)},
    "Clock": {
        1: ("clock_id", VARINT, None),
        2: ("timestamp", VARINT, None),
        3: ("is_incremental", VARINT, {0, 1}),
        4: ("unit_multiplier_ns", VARINT, None),
    },
    # protos/perfetto/trace/interned_data/interned_data.proto
    "InternedData": {
        1: ("event_categories", LEN, "EventName"),
        2: ("event_names", LEN, "EventName"),
        3: ("debug_annotation_names", LEN, "DebugAnnotationName"),
    },
    # protos/perfetto/trace/track_event/track_event.proto
    "EventName": {1: ("iid", VARINT, None), 2: ("name", LEN, str)},
    "TrackEvent": {
        3: ("category_iids", VARINT, None),
        4: ("debug_annotations", LEN, "DebugAnnotation"),
        9: ("type", VARINT, {0, 1, 2, 3, 4}),  # Type: UNSPECIFIED, SLICE_BEGIN, SLICE_END, INSTANT, COUNTER
        10: ("name_iid", VARINT, None),
        11: ("track_uuid", VARINT, None),
        22: ("categories", LEN, str),
        23: ("name", LEN, str),
        30: ("counter_value", VARINT, None),
        44: ("double_counter_value", I64, None),
    },
    # protos/perfetto/trace/track_event/debug_annotation.proto
    "DebugAnnotation": {
        1: ("name_iid", VARINT, None),
        2: ("bool_value", VARINT, {0, 1}),
        3: ("uint_value", VARINT, None),
        4: ("int_value", VARINT, None),
        5: ("double_value", I64, None),
        6: ("string_value", LEN, str),
        7: ("pointer_value", VARINT, None),
        10: ("name", LEN, str),
    },
    "DebugAnnotationName": {1: ("iid", VARINT, None), 2: ("name", LEN, str)},
    # protos/perfetto/trace/track_event/track_descriptor.proto
    "TrackDescriptor": {
        1: ("uuid", VARINT, None),
        2: ("name", LEN, str),
        3: ("process", LEN, "ProcessDescriptor"),
        4: ("thread", LEN, "ThreadDescriptor"),
        5: ("parent_uuid", VARINT, None),
        8: ("counter", LEN, "CounterDescriptor"),
    },
    # protos/perfetto/trace/track_event/process_descriptor.proto
    "ProcessDescriptor": {1: ("pid", VARINT, None), 2: ("cmdline", LEN, str), 6: ("process_name", LEN, str)},
    # protos/perfetto/trace/track_event/thread_descriptor.proto
    "ThreadDescriptor": {1: ("pid", VARINT, None), 2: ("tid", VARINT, None), 5: ("thread_name", LEN, str)},
    # protos/perfetto/trace/track_event/counter_descriptor.proto
    "CounterDescriptor": {
        1: ("type", VARINT, {0, 1, 2}),
        3: ("unit", VARINT, {0, 1, 2, 3}),  # Unit: UNSPECIFIED, TIME_NS, COUNT, SIZE_BYTES
        4: ("unit_multiplier", VARINT, None),
        5: ("is_incremental", VARINT, {0, 1}),
    },
}

REPEATED = {("Trace", 1), ("ClockSnapshot", 1), ("InternedData", 1), ("InternedData", 2), ("InternedData", 3),
            ("TrackEvent", 3), ("TrackEvent", 4), ("TrackEvent", 22), ("ProcessDescriptor", 2)}

BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4
BOOTTIME = 6  # BuiltinClock, the trace's clock by default


class Bad(Exception):
    pass


def varint(buf, i):
    v = shift = 0
    while True:
        if i >= len(buf):
            raise Bad("truncated varint")
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, i
        shift += 7
        if shift > 63:
            raise Bad("varint over 10 bytes")


def signed32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def parse(buf, msg, where):
    """A message as {field name: value or [values]}, checked against SCHEMA."""
    fields = SCHEMA[msg]
    out = {}
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if num not in fields:
            raise Bad(f"{where}: {msg} has no field {num} in Perfetto's schema")
        name, want_wt, sub = fields[num]
        if wt != want_wt:
            raise Bad(f"{where}: {msg}.{name} (field {num}) has wire type {wt}, the schema says {want_wt}")
        if wt == VARINT:
            v, i = varint(buf, i)
            if isinstance(sub, set) and v not in sub:
                raise Bad(f"{where}: {msg}.{name} = {v} is not a value the schema defines")
        elif wt == I64:
            v, i = buf[i:i + 8], i + 8
        elif wt == I32:
            v, i = buf[i:i + 4], i + 4
        else:
            n, i = varint(buf, i)
            if i + n > len(buf):
                raise Bad(f"{where}: {msg}.{name} runs past its message")
            raw, i = buf[i:i + n], i + n
            if sub is str:
                v = raw.decode("utf-8")
            elif isinstance(sub, str):
                v = parse(raw, sub, f"{where}.{name}")
            else:
                v = raw
        if (msg, num) in REPEATED:
            out.setdefault(name, []).append(v)
        elif name in out:
            raise Bad(f"{where}: {msg}.{name} appears twice")
        else:
            out[name] = v
    return out


def packets(data):
    """Trace.packet by Trace.packet, without holding a parsed Trace."""
    i = 0
    k = 0
    while i < len(data):
        key, i = varint(data, i)
        if key != (1 << 3 | LEN):
            raise Bad(f"offset {i}: Trace has only field 1 (packet), found key {key:#x}")
        n, i = varint(data, i)
        if i + n > len(data):
            raise Bad(f"packet {k}: runs past the end of the file")
        yield k, parse(data[i:i + n], "TracePacket", f"packet {k}")
        i += n
        k += 1


def check(data):
    names, ann_names = {}, {}
    tracks = {}  # uuid -> descriptor
    events = []  # (ts, order, track, type, name, reconstructed)
    stats = {"packets": 0}
    default_clock = BOOTTIME
    incremental = {}  # clock id -> [last value, offset to BOOTTIME]
    for k, p in packets(data):
        stats["packets"] += 1
        flags = p.get("sequence_flags", 0)
        # Timestamps: clock_snapshot.proto's rules for incremental clocks
        # (each a delta from the previous packet's on that clock, the first
        # from the snapshot's value) and sequence-scoped ids 64..127.
        if "clock_snapshot" in p:
            snap = {c["clock_id"]: c for c in p["clock_snapshot"]["clocks"]}
            if BOOTTIME not in snap:
                raise Bad(f"packet {k}: a clock snapshot without BOOTTIME")
            for cid, c in snap.items():
                if c.get("is_incremental"):
                    if not 64 <= cid <= 127:
                        raise Bad(f"packet {k}: incremental clock {cid} outside the sequence-scoped ids")
                    incremental[cid] = [c["timestamp"], snap[BOOTTIME]["timestamp"] - c["timestamp"]]
        if "trace_packet_defaults" in p and "timestamp_clock_id" in p["trace_packet_defaults"]:
            default_clock = p["trace_packet_defaults"]["timestamp_clock_id"]
        if "timestamp" in p:
            cid = p.get("timestamp_clock_id", default_clock)
            if cid == BOOTTIME:
                p["timestamp"] = p["timestamp"]
            elif cid in incremental:
                incremental[cid][0] += p["timestamp"]
                p["timestamp"] = incremental[cid][0] + incremental[cid][1]
            else:
                raise Bad(f"packet {k}: timestamp on clock {cid}, which no snapshot defined")
        if p.get("trusted_packet_sequence_id") != 1:
            raise Bad(f"packet {k}: not on sequence 1")
        if k == 0 and not flags & 1:
            raise Bad("the first packet does not clear the incremental state")
        for e in p.get("interned_data", {}).get("event_names", []):
            if e["iid"] in names:
                raise Bad(f"packet {k}: event name iid {e['iid']} defined twice")
            names[e["iid"]] = e["name"]
        for e in p.get("interned_data", {}).get("debug_annotation_names", []):
            if e["iid"] in ann_names:
                raise Bad(f"packet {k}: annotation name iid {e['iid']} defined twice")
            ann_names[e["iid"]] = e["name"]
        if "track_descriptor" in p:
            t = p["track_descriptor"]
            if t["uuid"] in tracks:
                raise Bad(f"packet {k}: track {t['uuid']} described twice")
            if "parent_uuid" in t and t["parent_uuid"] not in tracks:
                raise Bad(f"packet {k}: track {t['uuid']} has an undescribed parent")
            if "thread" in t:
                parent = tracks.get(t.get("parent_uuid"), {})
                if parent.get("process", {}).get("pid") != t["thread"]["pid"]:
                    raise Bad(f"packet {k}: thread track {t['uuid']} is not below its process's track")
            tracks[t["uuid"]] = t
        if "track_event" in p:
            e = p["track_event"]
            if k > 0 and not flags & 2:
                raise Bad(f"packet {k}: an event that does not say it needs the incremental state")
            if "timestamp" not in p:
                raise Bad(f"packet {k}: an event without a timestamp")
            track = e.get("track_uuid")
            if track not in tracks:
                raise Bad(f"packet {k}: event on undescribed track {track}")
            name = None
            if "name_iid" in e:
                if e["name_iid"] not in names:
                    raise Bad(f"packet {k}: name iid {e['name_iid']} used before it is defined")
                name = names[e["name_iid"]]
            anns = {}
            for a in e.get("debug_annotations", []):
                if a.get("name_iid") not in ann_names:
                    raise Bad(f"packet {k}: annotation name iid {a.get('name_iid')} not defined")
                anns[ann_names[a["name_iid"]]] = a
            is_counter = "counter" in tracks[track]
            if (e["type"] == COUNTER) != is_counter:
                raise Bad(f"packet {k}: event type {e['type']} on {'a' if is_counter else 'no'} counter track")
            if e["type"] == COUNTER and "counter_value" not in e:
                raise Bad(f"packet {k}: a counter event without a value")
            if e["type"] in (BEGIN, INSTANT) and name is None:
                raise Bad(f"packet {k}: a slice or instant without a name")
            rec = anns.get("reconstructed", {}).get("bool_value") == 1
            events.append((p["timestamp"], k, track, e["type"], name, rec))
    # Nesting, per track, in time order (file order among equal times).
    events.sort(key=lambda e: (e[0], e[1]))
    open_ = {}
    slices = {}  # thread track -> [(name, depth without reconstructed frames)]
    counts = {"slices": 0, "reconstructed": 0, "instants": 0, "counters": 0}
    for ts, k, track, typ, name, rec in events:
        st = open_.setdefault(track, [])
        if typ == BEGIN:
            counts["slices"] += 1
            if rec:
                counts["reconstructed"] += 1
                if any(not r for _, r in st):
                    raise Bad(f"packet {k}: reconstructed slice {name} inside a slice the trace saw begin")
            else:
                slices.setdefault(track, []).append((name, sum(1 for _, r in st if not r)))
            st.append((name, rec))
        elif typ == END:
            if not st:
                raise Bad(f"packet {k}: SLICE_END on track {track} with no open slice")
            st.pop()
        elif typ == INSTANT:
            counts["instants"] += 1
        else:
            counts["counters"] += 1
    for track, st in open_.items():
        if st:
            raise Bad(f"track {track}: {len(st)} slices never end ({st[-1][0]}...)")
    by_tid = {}
    for track, sl in slices.items():
        t = tracks[track]
        if "thread" in t:
            by_tid[t["thread"]["tid"]] = sl
    counts["max_depth"] = max((d + 1 for sl in by_tid.values() for _, d in sl), default=0)
    counts["thread_tracks"] = sum(1 for t in tracks.values() if "thread" in t)
    counts["packets"] = stats["packets"]
    return counts, by_tid


CALL_LINE = re.compile(r"^\S+ \[\d+\] .*/(-?\d+) (?:\[(\d+)\])?( *)-> (.+)$")
# What calls.c puts after the function: " [kind]" for calls that are not
# plain calls, then " (dso)" where the DSO changes. A function's own name
# may hold spaces (JIT code: "JS:^f node:internal/util:681:30").
CALL_SUFFIX = re.compile(r"(?: \[[a-z_]+\])?(?: \([^() ]+\))?$")


# The stack's cap (DECODE_CALL_STACK_MAX, client/decode/format/stack.h): a
# call past it is not tracked. calls still shows its line, at the cap's
# depth; the trace has no slice for it (perfetto.c: a slice it could not
# close), so those lines are not compared.
STACK_MAX = 1024


def read_calls(path):
    by_tid = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        m = CALL_LINE.match(line)
        if not m:
            continue
        tid = int(m.group(1))
        depth = int(m.group(2)) if m.group(2) else len(m.group(3)) // 2
        if depth >= STACK_MAX:
            continue
        by_tid.setdefault(tid, []).append((CALL_SUFFIX.sub("", m.group(4), count=1), depth))
    return by_tid


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--calls")
    ap.add_argument("--max-packet-bytes", type=float)
    ap.add_argument("--trace-bytes", type=int)
    ap.add_argument("--min-slices", type=int, default=1)
    a = ap.parse_args()
    data = open(a.trace, "rb").read()
    try:
        counts, by_tid = check(data)
        if counts["slices"] < a.min_slices:
            raise Bad(f"{counts['slices']} slices, fewer than {a.min_slices}")
        if a.calls:
            calls = read_calls(a.calls)
            for tid in sorted(set(calls) | set(by_tid)):
                want, got = calls.get(tid, []), [s for s in by_tid.get(tid, [])]
                for j, (w, g) in enumerate(zip(want, got)):
                    if w != g:
                        raise Bad(f"thread {tid}: call {j} is {w} in calls, {g} in the trace")
                if len(want) != len(got):
                    raise Bad(f"thread {tid}: {len(want)} calls in calls, {len(got)} slices in the trace")
        if a.max_packet_bytes is not None and len(data) > a.max_packet_bytes * counts["packets"]:
            raise Bad(f"{len(data)} bytes for {counts['packets']} packets, more than {a.max_packet_bytes} a packet")
    except Bad as e:
        print(f"FAIL: {a.trace}: {e}", file=sys.stderr)
        return 1
    ratio = f", {len(data) / a.trace_bytes:.2f} x the trace" if a.trace_bytes else ""
    print(f"ok: {len(data)} bytes{ratio}, {counts['packets']} packets, {counts['thread_tracks']} thread tracks, "
          f"{counts['slices']} slices ({counts['reconstructed']} reconstructed), max depth {counts['max_depth']}, "
          f"{counts['instants']} instants, {counts['counters']} counter values")
    return 0


if __name__ == "__main__":
    sys.exit(main())
