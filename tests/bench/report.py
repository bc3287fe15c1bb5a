#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# BENCHMARKS.md from the raw results tests/bench/run-all writes
# (OUT/machine.json, decode.json, realpt.json, snapshot.json,
# sideband.json, trigger.json; a section whose file is missing is listed
# as not run). Every statistic is computed here, from the individual runs,
# so the figures and the reading below them always agree:
#
#   report.py --in tests/bench/out --out BENCHMARKS.md
#
# tests/bench/test-report.py runs this on tests/bench/fixtures/ and
# compares with fixtures/expected.md; after an intended change of the
# output, regenerate that with
#   tests/bench/report.py --in tests/bench/fixtures --out tests/bench/fixtures/expected.md

import argparse
import json
import os
import re
import statistics
import sys

MIB = 1 << 20

# Goals the issues set (issue numbers in the project's tracker).
GOAL_DECODE_VS_PLAIN = 3.0  # issues 7 and 20: --format=branches end to end vs the plain loop, on 2 cores
GOAL_DECODE_VS_PLAIN_ONE_JOB = 1.5  # issue 20: the same with --jobs 1
GOAL_DECODE_VS_PERF = 50.0  # issue 20: --format=branches vs perf script --itrace=b on the export
GOAL_CALLS_VS_BRANCHES = 1.5  # issue 20: --format=calls wall time / --format=branches wall time
GOAL_PARALLEL_EFFICIENCY = 0.8  # issue 7
GOAL_BLACKOUT_RATIO = 1.2  # issue 20: blackout per CPU vs memcpy of the same bytes
GOAL_FREEZE_P99_64_US = 100.0  # issue 4: trigger to frozen, p99, 64 emulated CPUs
GOAL_SIDEBAND_RATIO = 2.0  # issue 20: the event loop's CPU vs perf record at 1,000 fork+exec/s
GOAL_TRIGGER_P99_US = 200.0  # issue 8: BPF event to freeze, p99


# --- statistics and formatting ------------------------------------------

def stats(values):
    """(median, min, max) of the values that are not None, or None."""
    v = [x for x in values if x is not None]
    if not v:
        return None
    return (statistics.median(v), min(v), max(v))


def med(values):
    s = stats(values)
    return s[0] if s else None


def fmt_s(x):
    if x is None:
        return 'n/a'
    if x < 1e-3:
        return '%.0f µs' % (x * 1e6)
    if x < 1:
        return '%.1f ms' % (x * 1e3)
    if x < 100:
        return '%.2f s' % x
    return '%.0f s' % x


def fmt_us(ns):
    if ns is None:
        return 'n/a'
    us = ns / 1e3
    if us < 10:
        return '%.2f µs' % us
    if us < 1000:
        return '%.1f µs' % us
    return '%.2f ms' % (us / 1e3)


def fmt_range(s, f):
    """'median [min–max]' with the formatter f."""
    if s is None:
        return 'n/a'
    return '%s [%s–%s]' % (f(s[0]), f(s[1]), f(s[2]))


def fmt_bytes(n):
    if n is None:
        return 'n/a'
    if n >= 10 * MIB:
        return '%.0f MiB' % (n / MIB)
    if n >= MIB:
        return '%.1f MiB' % (n / MIB)
    if n >= 1024:
        return '%.1f KiB' % (n / 1024)
    return '%d B' % n


def fmt_kb(kb):
    return 'n/a' if kb is None else fmt_bytes(kb * 1024)


def fmt_ratio(x):
    if x is None:
        return 'n/a'
    return '%.2f×' % x if x < 10 else '%.1f×' % x


def fmt_rate(x, unit):
    if x is None:
        return 'n/a'
    return ('%.1f %s' if x < 100 else '%.0f %s') % (x, unit)


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def size_label(n):
    """'1M' style, as bench-snapshot's cases are written."""
    return '%dM' % (n // MIB) if n >= MIB and n % MIB == 0 else fmt_bytes(n)


def table(head, rows):
    out = ['| ' + ' | '.join(head) + ' |', '|' + '|'.join('---' for _ in head) + '|']
    # A '|' in a cell (a shell pipe in a command) would end the cell.
    out += ['| ' + ' | '.join(str(c).replace('|', '\\|') for c in r) + ' |' for r in rows]
    return '\n'.join(out)


def load(indir, name):
    try:
        with open(os.path.join(indir, name + '.json')) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


# --- decode -------------------------------------------------------------

def fig_stats(f):
    """Median/min/max of wall time, and medians of CPU and peak RSS, of a
    figure's timed runs."""
    runs = [r for r in f.get('runs', []) if r.get('rc') == 0 or f.get('nonzero_ok')]
    if f.get('failed') or not runs:
        return None
    return {
        'wall': stats([r['wall_s'] for r in runs]),
        'cpu': med([r['user_s'] + r['sys_s'] for r in runs]),
        'rss_kb': med([r['maxrss_kb'] for r in runs]),
        'errors': med([r.get('trace_errors') for r in runs]),
        'n': len(runs),
    }


def perf_error_count(b, f):
    """perf's decode errors: perf script counts them only when it makes
    error events (--call-ret-trace and --itrace=be do, --itrace=b does
    not); the decoder and the data are the same, so a --itrace=b figure
    (older runs) shows the count of the --call-ret-trace figure of the same
    bundle."""
    s = fig_stats(f)
    counted = f['group'] == 'calls' or re.search(r'--itrace=[a-z0-9]*e', f['name'])
    if counted or (s and s['errors']):
        return '{:,}'.format(int(s['errors'] or 0)) if s else ''
    for g in b['figures']:
        if g['tool'] == 'perf' and g['group'] == 'calls':
            gs = fig_stats(g)
            if gs:
                return '{:,}'.format(int(gs['errors'] or 0)) + '¹'
    return 'not counted'


def perf_option(b, group):
    """The --itrace (or --call-ret-trace) option of perf's figure of a
    group, as the run named it."""
    for f in b['figures']:
        if f['tool'] == 'perf' and f['group'] == group:
            m = re.search(r'--itrace=\S+|--call-ret-trace', f['name'])
            if m:
                return m.group(0)
    return '--itrace=b' if group == 'branches' else '--call-ret-trace'


def fig_label(f):
    j = ' --jobs %d' % f['jobs'] if f['tool'] == 'ptctl' else ''
    return f['name'] + j


def decode_reference(b, f):
    """The figure f is compared with: perf's for the same output (ptctl
    against perf), else the plain loop."""
    figs = b['figures']
    if f['tool'] == 'ptctl':
        for g in figs:
            if g['tool'] == 'perf' and g['group'] == f['group']:
                return g
        for g in figs:
            # The --decoder= figures are branches too, compared with the plain loop.
            if g['tool'] == 'plain' and g['group'] in (f['group'], 'branches' if f['group'] == 'decoder' else None):
                return g
    return None


def decode_section(d, notes, headlines):
    out = ['## 1. Decode', '']
    if d is None:
        return out + ['Not run in this invocation.', '']
    n = d.get('nproc')
    out.append('Synthesized bundles (`ptsynth`, 4 CPUs, every ring wrapped, so the trace is exactly the size '
               'named), decoded end to end from the file: reading and decompressing the bundle, decoding, and '
               'writing the output to /dev/null. Instructions and branches are the trace\'s as `ptctl decode '
               '--format=summary` counts them; instructions/s for every tool use that count (the plain loop '
               'counts the same instructions). perf reads the directory `ptctl export --perf` wrote from the same '
               'bundle. Wall time is the median of the runs [min–max]; CPU is user+system time; RSS is the '
               'peak resident set of the process (wait4). The ratio is the other tool\'s wall time divided by '
               'ptctl\'s: above 1 ptctl is faster.')
    out.append('')
    rows = []
    for b in d['bundles']:
        rows.append(['`%s`' % b['name'], b['mode'], fmt_bytes(b['trace_bytes']), fmt_bytes(b['bundle_bytes']),
                     '{:,}'.format(b['instructions']), '{:,}'.format(b['branches']), b['decode_errors'],
                     '`%s`' % b['synth_argv']])
    out.append(table(['bundle', 'traced', 'trace', 'bundle file', 'instructions', 'branches', 'ptctl errors',
                      'made with'], rows))
    out.append('')
    rows = []
    for b in d['bundles']:
        for f in b['figures']:
            if f['tool'] == 'machine':
                continue  # in the scaling table below
            s = fig_stats(f)
            if s is None:
                rows.append(['`%s`' % b['name'], fig_label(f), 'failed: %s' % f.get('failed', 'no runs'), '', '', '',
                             '', '', ''])
                continue
            wall = s['wall'][0]
            ref = decode_reference(b, f)
            rs = fig_stats(ref) if ref else None
            r = ratio(rs['wall'][0], wall) if rs else None
            vs = ('%s vs %s' % (fmt_ratio(r), 'perf' if ref['tool'] == 'perf' else 'plain')) if r else ''
            err = ''
            if f['tool'] == 'perf':
                err = perf_error_count(b, f)
            elif f['tool'] == 'ptctl':
                err = str(b['decode_errors'])
            rows.append(['`%s`' % b['name'], fig_label(f), fmt_range(s['wall'], fmt_s), fmt_s(s['cpu']),
                         fmt_rate(b['trace_bytes'] / 1e6 / wall, 'MB/s'),
                         fmt_rate(b['instructions'] / 1e6 / wall, 'M/s'), fmt_kb(s['rss_kb']), err, vs])
    out.append(table(['bundle', 'command', 'wall', 'CPU', 'trace MB/s', 'insn/s', 'peak RSS', 'errors', 'ratio'],
                     rows))
    out.append('')
    out.append('"errors" are the decode errors each tool reports: ptctl\'s from its summary, perf\'s from its '
               '"N instruction trace errors" warning. ¹ perf script --itrace=b does not count errors (no `e` in '
               '--itrace); the count is that of --call-ret-trace on the same data, same decoder.')
    out.append('')
    cmds = []
    for b in d['bundles']:
        for f in b['figures']:
            if f['tool'] == 'machine':
                continue
            c = f['argv'].replace(b['path'], 'BUNDLE.tar').replace(b['name'] + '.plain.json', 'COUNTS.json')
            if b.get('perf_dir'):
                c = c.replace(b['perf_dir'], 'DIR')
            if c not in cmds:
                cmds.append(c)
    if cmds:
        out.append('The commands, BUNDLE.tar being the bundle and DIR the directory `ptctl export --perf '
                   'BUNDLE.tar DIR` wrote:')
        out.append('')
        out += ['    ' + c for c in cmds]
        out.append('')

    # Peak memory against the trace (issue 20): it must not grow with it.
    mrows = []
    for b in d['bundles']:
        for f in b['figures']:
            s = fig_stats(f) if f['group'] == 'memory' else None
            if s is None:
                continue
            mrows.append(['`%s`' % b['name'], fmt_bytes(b['trace_bytes']), fmt_kb(s['rss_kb']),
                          '%.2f' % (s['rss_kb'] * 1024 / b['trace_bytes']) if b['trace_bytes'] else ''])
    if mrows:
        out.append('Peak RSS decoding an N MiB bundle, `ptctl decode -q --jobs=2 --format=summary`: the trace '
                   'is mapped from a file and its pages are given back as the index and the workers finish '
                   'with them, so the peak is the segments in flight, the images and the caches, not the '
                   'trace (issue 20: a 1 GiB bundle in < 1 GiB RSS).')
        out.append('')
        out.append(table(['bundle', 'trace', 'peak RSS', 'RSS / trace'], mrows))
        out.append('')
        # The goal is about a 1 GiB bundle: extrapolated along the line
        # through the smallest and the largest bundle measured.
        pts = sorted((b['trace_bytes'], fig_stats(f)['rss_kb'] * 1024) for b in d['bundles'] for f in b['figures']
                     if f['group'] == 'memory' and fig_stats(f))
        if len(pts) >= 2 and pts[-1][0] > pts[0][0]:
            (t0, r0), (t1, r1) = pts[0], pts[-1]
            # RSS that shrinks from the smaller bundle to the larger does
            # not grow with the trace: the most any bundle took stands.
            slope = max(0.0, (r1 - r0) / (t1 - t0))
            at_gib = max(r for _, r in pts) + slope * ((1 << 30) - t1)
            headlines.append(('Decode: peak RSS for a 1 GiB trace, extrapolated from %s (%s RSS) and %s (%s), '
                              '`--jobs 2`' % (fmt_bytes(t0), fmt_kb(r0 / 1024), fmt_bytes(t1), fmt_kb(r1 / 1024)),
                              fmt_kb(at_gib / 1024), '< 1 GiB (issue 20)', at_gib < (1 << 30)))

    # Scaling over --jobs on every bundle that has more than one jobs value
    # for --format=branches.
    srows = []
    for b in d['bundles']:
        figs = [f for f in b['figures'] if f['tool'] == 'ptctl' and f['group'] == 'branches']
        if len({f['jobs'] for f in figs}) < 2:
            continue
        one = next((fig_stats(f) for f in figs if f['jobs'] == 1), None)
        for f in sorted(figs, key=lambda f: f['jobs']):
            s = fig_stats(f)
            if s is None or one is None:
                continue
            speedup = one['wall'][0] / s['wall'][0]
            srows.append(['`%s`' % b['name'], f['jobs'], fmt_range(s['wall'], fmt_s), fmt_s(s['cpu']),
                          fmt_ratio(speedup), '%.2f' % (speedup / f['jobs'])])
            if f['jobs'] == n and n > 1:
                headlines.append(('Decode: parallel efficiency of `--jobs %d`, %s' % (n, b['name']),
                                  '%.2f' % (speedup / n), '≥ %.1f (issue 7)' % GOAL_PARALLEL_EFFICIENCY,
                                  speedup / n >= GOAL_PARALLEL_EFFICIENCY))
    # The machine's own ceiling: nproc independent --jobs 1 decodes at once
    # do nproc times the work; efficiency = --jobs 1 wall / their wall.
    ceilings = []
    for b in d['bundles']:
        one = next((fig_stats(f) for f in b['figures']
                    if f['tool'] == 'ptctl' and f['group'] == 'branches' and f['jobs'] == 1), None)
        for f in b['figures']:
            s = fig_stats(f) if f['tool'] == 'machine' else None
            if s is None or one is None:
                continue
            eff = one['wall'][0] / s['wall'][0]
            srows.append(['`%s`' % b['name'], '%d × `--jobs 1` at once' % f['jobs'], fmt_range(s['wall'], fmt_s),
                          fmt_s(s['cpu']), fmt_ratio(eff * f['jobs']), '%.2f' % eff])
            ceilings.append((b['name'], f['jobs'], eff))
            headlines.append(('Decode: this machine\'s own ceiling, %d independent `--jobs 1` decodes at once, %s'
                              % (f['jobs'], b['name']), '%.2f' % eff, '', None))
    if srows:
        out.append('Scaling of `ptctl decode --format=branches --fields=cpu,tid,from,to,kind` over `--jobs` '
                   '(speedup = wall time of `--jobs 1` / wall time; efficiency = speedup / jobs). The rows '
                   '"N × `--jobs 1` at once" run N independent single-threaded decodes of the bundle side by '
                   'side (N times the work; speedup = N × the wall time of one alone / their wall time): they '
                   'share nothing, so their efficiency is what this machine gives N busy threads, the ceiling '
                   'for `--jobs N`.')
        out.append('')
        out.append(table(['bundle', 'jobs', 'wall', 'CPU', 'speedup', 'efficiency'], srows))
        out.append('')
    for name, jobs, eff in ceilings:
        notes.append('Decode scaling, `%s`: %d independent single-threaded decodes at once reach an efficiency of '
                     '%.2f on this machine (each runs slower next to the other than alone), the ceiling for '
                     '`--jobs %d`; compare the `--jobs %d` row above.' % (name, jobs, eff, jobs, jobs))

    # Headlines and notes.
    for b in d['bundles']:
        byname = {}
        for f in b['figures']:
            byname[(f['tool'], f['group'], f['jobs'])] = fig_stats(f)
        for group, what in (('branches', '--format=branches'), ('calls', '--format=calls')):
            ours = byname.get(('ptctl', group, n))
            perf = byname.get(('perf', group, 1))
            if ours and perf:
                r = perf['wall'][0] / ours['wall'][0]
                headlines.append(('Decode: `ptctl decode %s` vs `perf script %s`, %s' %
                                  (what, perf_option(b, group), b['name']),
                                  '%s faster' % fmt_ratio(r) if r >= 1 else '%s slower' % fmt_ratio(1 / r),
                                  '≥ %.0f× (issue 20)' % GOAL_DECODE_VS_PERF if group == 'branches' else '',
                                  r >= GOAL_DECODE_VS_PERF if group == 'branches' else None))
                notes.append('Decode %s, `%s`: ptctl (`--jobs %d`) is %s: %s against perf\'s %s, %s; peak RSS '
                             '%s against %s.' % (
                                 what, b['name'], n, 'ahead' if r >= 1 else 'behind', fmt_s(ours['wall'][0]),
                                 fmt_s(perf['wall'][0]),
                                 '%s faster' % fmt_ratio(r) if r >= 1 else '%s slower' % fmt_ratio(1 / r),
                                 fmt_kb(ours['rss_kb']), fmt_kb(perf['rss_kb'])))
        branches, calls = byname.get(('ptctl', 'branches', n)), byname.get(('ptctl', 'calls', n))
        if branches and calls:
            r = calls['wall'][0] / branches['wall'][0]
            headlines.append(('Decode: `--format=calls` / `--format=branches` wall time, `--jobs %d`, %s'
                              % (n, b['name']), fmt_ratio(r), '≤ %.1f× (issue 20)' % GOAL_CALLS_VS_BRANCHES,
                              r <= GOAL_CALLS_VS_BRANCHES))
        plain = byname.get(('plain', 'branches', 1))
        pf = next((f for f in b['figures'] if f['tool'] == 'plain'), None)
        counts = {r['output']['instructions'] for r in (pf or {}).get('runs', []) if r.get('output')}
        if plain and counts:
            n_plain = counts.pop() if len(counts) == 1 else None
            notes.append('`%s`: the plain loop decoded %s instructions, ptctl %s%s.' % (
                b['name'], '{:,}'.format(n_plain) if n_plain is not None else 'a varying number of',
                '{:,}'.format(b['instructions']),
                ': the same work' if n_plain == b['instructions'] else ': not the same work, so their times do '
                'not compare directly'))
        if plain:
            for j in sorted({1, n}):
                ours = byname.get(('ptctl', 'branches', j))
                if not ours:
                    continue
                r = plain['wall'][0] / ours['wall'][0]
                goal = GOAL_DECODE_VS_PLAIN if j == n else GOAL_DECODE_VS_PLAIN_ONE_JOB
                headlines.append(('Decode: `ptctl decode --format=branches --jobs %d` vs the plain libipt loop, '
                                  '%s' % (j, b['name']), fmt_ratio(r),
                                  '≥ %s× (issue 20%s)' % ('%g' % goal, ', 2 cores' if j == n else ''),
                                  r >= goal))
                notes.append('`%s`, `--jobs %d`: %s the plain single-threaded libipt loop (%s against %s); '
                             'CPU time %s against %s.' % (
                                 b['name'], j, '%s faster than' % fmt_ratio(r) if r >= 1
                                 else '%s slower than' % fmt_ratio(1 / r), fmt_s(ours['wall'][0]),
                                 fmt_s(plain['wall'][0]), fmt_s(ours['cpu']), fmt_s(plain['cpu'])))
    return out


def realpt_section(d):
    out = ['## 5. Real traces (../shared/realpt)', '']
    if d is None:
        return out + ['Not run in this invocation.', '']
    if d.get('skipped'):
        return out + ['Skipped: %s.' % d['skipped'], '']
    out.append('Recorded on real Intel hardware by others (provenance in ../shared/realpt/README.md). They are '
               'small (kilobytes), so these times are mostly start-up: they show that the paths work and what a '
               'decode of a small trace costs, not throughput. The quipper recordings come without their '
               'binaries: both tools report the missing code as errors.')
    out.append('')
    rows = []
    for s in d['sets']:
        for f in s['figures']:
            st = fig_stats(f)
            rows.append([s['name'], fmt_bytes(s['file_bytes']),
                         '{:,}'.format(s['instructions']) if s.get('instructions') is not None else 'n/a',
                         '`%s`' % f['argv'], fmt_range(st['wall'], fmt_s) if st else 'failed: %s' % f.get('failed'),
                         fmt_kb(st['rss_kb']) if st else '',
                         ('{:,}'.format(int(st['errors'] or 0)) if f['tool'] == 'perf' else str(s['decode_errors']))
                         if st else ''])
    out.append(table(['trace', 'file', 'instructions (ptctl)', 'command', 'wall', 'peak RSS', 'errors'], rows))
    out.append('')
    return out


# --- snapshot -------------------------------------------------------------

def snapshot_section(d, notes, headlines, nproc):
    out = ['## 2. Snapshot', '']
    if d is None:
        return out + ['Not run in this invocation.', '']
    if d.get('skipped') or d.get('failed'):
        return out + ['%s: %s' % ('Skipped' if d.get('skipped') else 'Failed', d.get('skipped') or d['failed']), '']
    out.append('The recorder\'s real freeze/copy/thaw code on the emulated PMU (`%s`). Each run freezes every '
               'case %d times and reports percentiles over those freezes; the table gives the median of the '
               'runs\' p50 and p99 [min–max over the runs]. Trigger→frozen is from the trigger to the last CPU\'s '
               'trace disabled. The blackout of a CPU is ptraced\'s own: from its DISABLE returned (its trace stopped '
               'no later) to its ENABLE asked for, its ring copied; "copy wait" is the part of it before the copy '
               'began (for a copy thread, or for other CPUs\' DISABLEs). What the ENABLE takes after that is '
               'the kernel\'s (an IPI to the CPU), here the emulated PMU\'s stand-in for it, shown apart as '
               '"ENABLE", with what each DISABLE takes (the emulated IPI and the emulator generating the trace it '
               'publishes; an IPI on hardware). Every ring has wrapped before the freezes, so each copy is the whole ring, and memcpy '
               'is a plain memcpy of as many bytes between prefaulted buffers on this machine: back to back '
               '(warm in the caches and the TLB), and after the same 2 ms idle that comes before each freeze '
               '("after idle"); "as many at once" runs that many of those copies at the same time on their own '
               'threads after the idle and counts the slowest, as many as the recorder copies at once by its '
               'rules (one at a time when copying every CPU but the last fits in 50 µs, else its copy threads and '
               'the freezing thread together): copies at once share the memory bandwidth.' % (d['argv'], d['rounds']))
    out.append('')
    cases = {}
    for run in d['runs']:
        for c in run:
            cases.setdefault((c['cpus'], c['ring_bytes']), []).append(c)
    rows = []
    for (cpus, ring), cs in sorted(cases.items()):
        f50 = stats([c['freeze_p50_ns'] for c in cs])
        f99 = stats([c['freeze_p99_ns'] for c in cs])
        b50 = stats([c['blackout_p50_ns'] for c in cs])
        b99 = stats([c['blackout_p99_ns'] for c in cs])
        mc = stats([c['memcpy_p50_ns'] for c in cs])
        r = stats([c['blackout_p50_ns'] / max(c['memcpy_p50_ns'], 1) for c in cs])
        # Older bench-snapshot output lacks these columns.
        wt = stats([c['copy_wait_p50_ns'] for c in cs if 'copy_wait_p50_ns' in c])
        mi = stats([c['memcpy_idle_p50_ns'] for c in cs if 'memcpy_idle_p50_ns' in c])
        ri = stats([c['blackout_p50_ns'] / max(c['memcpy_idle_p50_ns'], 1) for c in cs if 'memcpy_idle_p50_ns' in c])
        ma = stats([c['memcpy_at_once_p50_ns'] for c in cs if 'memcpy_at_once_p50_ns' in c])
        ra = stats([c['blackout_p50_ns'] / max(c['memcpy_at_once_p50_ns'], 1) for c in cs
                    if 'memcpy_at_once_p50_ns' in c])
        at_once = cs[0].get('copies_at_once')
        en = stats([c['enable_p50_ns'] for c in cs if 'enable_p50_ns' in c])
        di = stats([c['disable_p50_ns'] for c in cs if 'disable_p50_ns' in c])
        th = stats([c['thaw_p50_ns'] for c in cs])
        rows.append([cpus, size_label(ring), fmt_range(f50, fmt_us), fmt_range(f99, fmt_us), fmt_range(b50, fmt_us),
                     fmt_us(b99[0]), fmt_us(wt[0]) if wt else '', fmt_us(mc[0]), fmt_ratio(r[0]),
                     fmt_us(mi[0]) if mi else '', fmt_ratio(ri[0]) if ri else '',
                     str(at_once) if at_once else '', fmt_us(ma[0]) if ma else '', fmt_ratio(ra[0]) if ra else '',
                     fmt_us(di[0]) if di else '',
                     fmt_us(en[0]) if en else '',
                     fmt_us(th[0]),
                     ('%s/s' % fmt_bytes(cs[0]['production_bytes_per_sec'])) if 'production_bytes_per_sec' in cs[0]
                     else ''])
        if cpus == 64 and f99:
            headlines.append(('Snapshot: trigger→frozen p99, 64 emulated CPUs × %s' % size_label(ring),
                              fmt_us(f99[0]), '≤ %.0f µs (issue 4)' % GOAL_FREEZE_P99_64_US,
                              f99[0] / 1e3 <= GOAL_FREEZE_P99_64_US))
        if cpus == 2 and ra:
            # Like for like: the recorder's copies come after idle, as
            # many at once as it makes (bench-snapshot's copies_at_once).
            headlines.append(('Snapshot: blackout per CPU / memcpy of the same bytes after the same idle, as many '
                              'at once as the recorder copies (%s), 2 CPUs × %s' % (at_once, size_label(ring)),
                              fmt_ratio(ra[0]), '≤ %.1f× (issue 20)' % GOAL_BLACKOUT_RATIO, ra[0] <= GOAL_BLACKOUT_RATIO))
            headlines.append(('Snapshot: blackout per CPU / one memcpy back to back (warm), 2 CPUs × %s'
                              % size_label(ring), fmt_ratio(r[0]), '', None))
        elif cpus == 2:
            headlines.append(('Snapshot: blackout per CPU / memcpy, 2 CPUs × %s' % size_label(ring),
                              fmt_ratio(r[0]), '≤ %.1f× (issue 20)' % GOAL_BLACKOUT_RATIO, r[0] <= GOAL_BLACKOUT_RATIO))
    out.append(table(['CPUs', 'ring/CPU', 'trigger→frozen p50', 'trigger→frozen p99', 'blackout/CPU p50',
                      'blackout p99', 'copy wait p50', 'memcpy same bytes', 'blackout / memcpy',
                      'memcpy after idle', 'blackout / memcpy after idle', 'copies at once',
                      'memcpy after idle, as many at once', 'blackout / that', 'DISABLE p50', 'ENABLE p50', 'trigger→all thawed p50',
                      'production/CPU'], rows))
    out.append('')

    worst = max(rows, key=lambda r: float(r[8].rstrip('×'))) if rows else None
    if worst:
        notes.append('Snapshot: the blackout per CPU is %s a memcpy of the same bytes at worst (%s CPUs × %s). The '
                     'recorder copies on the freezing thread and %s copy thread(s) here: with more emulated CPUs '
                     'than cores, a CPU\'s blackout also holds the time its copy waits for a thread, so on this '
                     'machine the ratio grows with the number of emulated CPUs. On a real machine there are as '
                     'many cores as traced CPUs.' % (worst[8], worst[0], worst[1],
                                                    min(max(nproc - 1, 1), 16) if nproc else '?'))

    bundles = d.get('bundle', [])
    if bundles:
        out.append('Time to bundle on disk: `bench-bundle` writes N CPUs × M MiB of PT-shaped trace through the '
                   'bundle writer the dump stage uses (zstd per member, SHA-256, tar, fsync, rename) and compares '
                   'with `zstd -1 -T1` on the same bytes as one file plus `sync` (a plain compressed copy), and '
                   'reads the bundle back with every hash checked. Median of the runs [min–max]; ratio = bundle '
                   'writer / zstd -1, below 1 the bundle is faster or smaller.')
        out.append('')
        rows = []
        for b in bundles:
            label = '%d × %d MiB' % (b['cpus'], b['mib_per_cpu'])
            if b.get('failed') or not b['runs']:
                rows.append([label, 'failed: %s' % b.get('failed', 'no runs')] + [''] * 7)
                continue
            rs = b['runs']
            tb = stats([r['bundle_s'] for r in rs])
            tz = stats([r['zstd_s'] for r in rs])
            tr = med([r['bundle_s'] / r['zstd_s'] for r in rs])
            sb = med([r['bundle_bytes'] for r in rs])
            sz = med([r['zstd_bytes'] for r in rs])
            rd = med([r['read_verify_s'] for r in rs])
            nbytes = rs[0]['trace_bytes']
            rows.append([label, fmt_range(tb, fmt_s), fmt_rate(nbytes / 1e6 / tb[0], 'MB/s'), fmt_range(tz, fmt_s),
                         fmt_ratio(tr), fmt_bytes(sb), fmt_bytes(sz), '%.3f×' % (sb / sz), fmt_s(rd)])
            headlines.append(('Bundle: time to bundle on disk / `zstd -1`, %s' % label, fmt_ratio(tr), '', None))
            notes.append('Bundle, %s: the bundle on disk takes %s of `zstd -1`\'s time for the same bytes (%s), '
                         'and its size is %.3f× zstd\'s.' % (label, fmt_ratio(tr), 'ahead' if tr <= 1 else 'behind',
                                                             sb / sz))
        out.append(table(['trace', 'bundle writer', 'MB/s', 'zstd -1 + sync', 'time ratio', 'bundle size',
                          'zstd -1 size', 'size ratio', 'read + verify'], rows))
        out.append('')
        out.append('Commands: ' + ', '.join('`%s`' % b['argv'] for b in bundles) + '.')
        out.append('')
    return out


# --- side-band --------------------------------------------------------------

def sideband_section(d, notes, headlines):
    out = ['## 3. Side-band', '']
    if d is None:
        return out + ['Not run in this invocation.', '']
    if d.get('skipped'):
        return out + ['Skipped: %s.' % d['skipped'], '']
    out.append('CPU time and memory of the process that keeps the side-band, under paced process churn: '
               '`bench-loadgen` forks and execs /bin/true at the requested rate (vfork + execve, spread over '
               'worker processes; the achieved rate is measured and shown, as a small machine cannot reach every '
               'rate asked). Each point is %d windows of %g s after %d warm-up window(s), the load running '
               'throughout; CPU is the watched process\'s CPU clock (all threads) over the window, per second of '
               'wall time, in %% of one CPU (/proc/PID/stat\'s utime+stime agree, at 10 ms resolution); RSS is '
               'VmRSS at the end of the window and the peak VmHWM of the run from /proc/PID/status. Rate 0 is '
               'the idle baseline. The tools:' % (d['runs_per_point'], d['window_s'], d['warmup_windows']))
    out.append('')
    for t in d['tools']:
        out.append('* %s: `%s`' % (t['name'], t['command']))
    out.append('')
    out.append('ptraced runs on the emulated PMU with this configuration (in a temporary directory); its total '
               'includes the emulated PMU\'s producer threads, which stand in for the hardware and cost nothing on '
               'a real machine, so the "event loop" column (the main thread: draining the side-band, the process '
               'model, control) is the side-band\'s own cost:')
    out.append('')
    out.append('```ini\n' + d['config'].rstrip() + '\n```')
    out.append('')
    pts = {}
    for p in d['points']:
        pts[(p['tool'], p['rate_requested'])] = p
    rows = []
    perf_cpu = {}  # rate -> {perf variant: median CPU %}
    mine = {}  # rate -> (median CPU %, median event loop %)
    for rate in d['rates']:
        for t in d['tools']:
            p = pts.get((t['name'], rate))
            if p is None:
                continue
            if p.get('failed'):
                rows.append([rate, t['name'], 'failed: %s' % p['failed'], '', '', '', '', '', ''])
                continue
            rs = p['runs']
            achieved = med([r['rate'] for r in rs])
            cpu = stats([100 * r['cpu_s'] / r['wall_s'] for r in rs])
            main = med([100 * r['main_thread_cpu_s'] / r['wall_s'] for r in rs])
            rss = med([r['rss_kb'] for r in rs])
            hwm = max(r['hwm_kb'] for r in rs)
            if t['name'] == 'ptraced':
                mine[rate] = (cpu[0], main)
            else:
                perf_cpu.setdefault(rate, {})[t['name']] = cpu[0]
            per = ''
            if t['name'] == 'ptraced' and rate and 0 in mine and achieved:
                # The event loop's CPU per process lifetime, above idle.
                x = (main - mine[0][1]) / 100 / achieved * 1e6
                per = '%.1f µs' % x if x > 0 else 'within idle noise'
            rows.append([rate, t['name'], '%.0f' % achieved, fmt_range(cpu, lambda x: '%.2f %%' % x),
                         '%.2f %%' % main if t['name'] == 'ptraced' else '', per, fmt_kb(rss), fmt_kb(hwm), ''])
    # ptraced's CPU (all threads / event loop) over each perf variant's.
    for r in rows:
        if r[1] != 'ptraced' or r[0] not in mine:
            continue
        total, loop = mine[r[0]]
        parts = []
        for name, c in sorted(perf_cpu.get(r[0], {}).items()):
            if c > 0:
                parts.append('%s / %s vs %s' % (fmt_ratio(total / c), fmt_ratio(loop / c), name))
        r[8] = '; '.join(parts)
    ref = perf_cpu.get(1000, {}).get('perf dummy')
    if 1000 in mine and ref:
        x = mine[1000][1] / ref
        headlines.append(('Side-band: ptraced\'s event loop CPU / `perf record -e dummy -a --switch-events -o '
                          '/dev/null`, 1,000 fork+exec/s asked', fmt_ratio(x), '≤ %.0f× (issue 20)' % GOAL_SIDEBAND_RATIO,
                          x <= GOAL_SIDEBAND_RATIO))
        # Not a goal: the emulated PMU's threads stand in for the hardware
        # (they follow the real side-band through a process model of their
        # own and synthesize the trace), which costs ptraced nothing there.
        x = mine[1000][0] / ref
        headlines.append(('Side-band: the same with all of ptraced\'s threads (emulated PMU included)', fmt_ratio(x),
                          'none: the emulated PMU stands in for hardware', None))
    for rate in sorted(mine):
        ref = perf_cpu.get(rate, {}).get('perf dummy')
        if rate and ref:
            notes.append('Side-band at %d fork+exec/s asked: ptraced uses %.2f %% of a CPU (%.2f %% in its event '
                         'loop) against perf record\'s %.2f %%: %s.' % (
                             rate, mine[rate][0], mine[rate][1], ref,
                             'ahead' if mine[rate][0] <= ref else 'behind, %s perf\'s CPU time' %
                             fmt_ratio(mine[rate][0] / ref)))
    out.append(table(['fork+exec/s asked', 'tool', 'achieved/s', 'CPU (all threads)', 'event loop thread',
                      'event loop per fork+exec', 'RSS', 'peak RSS', 'ptraced / perf (all threads / event loop)'],
                     rows))
    out.append('')
    out.append('"event loop per fork+exec" is the event loop\'s CPU time above its idle baseline divided by the '
               'processes started: what one short-lived process costs ptraced.')
    out.append('')
    out.append('Load generator: `%s` (PID = the tool\'s process).' % d['loadgen'])
    out.append('')
    return out


# --- triggers -----------------------------------------------------------------

def trigger_section(d, notes, headlines):
    out = ['## 4. Triggers', '']
    if d is None:
        return out + ['Not run in this invocation.', '']
    out.append('From the BPF event to the freeze: a function-hit trigger (a uprobe) on a function of the benchmark '
               'program, a thread calling it, and the manager on the emulated PMU running its event loop as '
               'ptraced does (`bench-trigger-latency`). The latency is from the event\'s bpf_ktime_get_ns() to the '
               'last CPU\'s trace disabled; event→handler is until the daemon read the event from the BPF ring '
               'buffer. Each run gives percentiles over its events; the table gives the median of the runs '
               '[min–max] (with this few events per run a run\'s p99 is close to its maximum) and the p99 of '
               'all the runs\' events together. SCHED_FIFO makes the event loop thread (only it) real-time priority 1, as a deployment '
               'that wants the freeze bounded on a busy machine would.')
    out.append('')
    rows = []
    for v in d['variants']:
        if v.get('skipped') or v.get('failed') or not v['runs']:
            rows.append([v['event_loop'], '%s: %s' % ('skipped' if v.get('skipped') else 'failed',
                                                      v.get('skipped') or v.get('failed') or 'no runs'), '', '', '',
                         '', ''])
            continue
        rs = v['runs']
        f50 = stats([r['event_to_freeze']['p50_ns'] for r in rs])
        f99 = stats([r['event_to_freeze']['p99_ns'] for r in rs])
        pooled = sorted(x for r in rs for x in r['event_to_freeze'].get('samples_ns', []))
        p99 = pooled[min(len(pooled) - 1, (len(pooled) * 99) // 100)] if pooled else None
        h50 = med([r['event_to_handler']['p50_ns'] for r in rs])
        h99 = med([r['event_to_handler']['p99_ns'] for r in rs])
        n = sum(r['event_to_freeze']['events'] for r in rs)
        rows.append([v['event_loop'], fmt_range(f50, fmt_us), fmt_range(f99, fmt_us),
                     '%s (%d events)' % (fmt_us(p99), len(pooled)) if pooled else 'n/a', fmt_us(h50), fmt_us(h99),
                     '%d × %d' % (len(rs), n // len(rs))])
        if pooled:
            notes.append('Triggers, event loop %s: half of the freezes came within %s of the BPF event, 99 %% within '
                         '%s (all runs\' events pooled), against the goal of %.0f µs.' % (
                             v['event_loop'], fmt_us(pooled[len(pooled) // 2]), fmt_us(p99), GOAL_TRIGGER_P99_US))
        # The headline is the p99 of every event of every run: a run's own
        # p99 over a few dozen events is nearly its maximum, and the median
        # of those would hide the tail the goal is about.
        if pooled:
            headlines.append(('Triggers: BPF event → freeze p99 (%s, %d emulated CPUs), all %d events of the runs' %
                              (v['event_loop'], rs[0]['cpus'], len(pooled)), fmt_us(p99),
                              '< %.0f µs (issue 8)' % GOAL_TRIGGER_P99_US, p99 / 1e3 < GOAL_TRIGGER_P99_US))
    out.append(table(['event loop', 'event→freeze p50', 'event→freeze p99', 'p99 of all runs\' events',
                      'event→handler p50', 'event→handler p99', 'runs × events'], rows))
    out.append('')
    out.append('Commands: ' + ', '.join('`%s`' % v['argv'] for v in d['variants'] if 'argv' in v) + '.')
    out.append('')
    return out


# --- the document -------------------------------------------------------------

def machine_section(m):
    out = ['## Machine', '']
    if m is None:
        return out + ['Unknown (no machine.json).', '']
    l = m.get('lscpu', {})
    cpu = l.get('Model name', '?')
    rows = [
        ['CPU', '%s (%s, family %s model %s stepping %s)' % (cpu, l.get('Vendor ID', '?'), l.get('CPU family', '?'),
                                                              l.get('Model', '?'), l.get('Stepping', '?'))],
        ['CPUs', '%s (%s socket(s) × %s core(s) × %s thread(s)); caches L1d %s, L2 %s, L3 %s' % (
            l.get('CPU(s)', m.get('nproc')), l.get('Socket(s)', '?'), l.get('Core(s) per socket', '?'),
            l.get('Thread(s) per core', '?'), l.get('L1d cache', '?'), l.get('L2 cache', '?'), l.get('L3 cache', '?'))],
        ['Virtualization', l.get('Hypervisor vendor', 'none (bare metal)')],
        ['Memory', '%s GiB' % m.get('mem_total_gib')],
        ['Kernel, OS', '%s, %s' % (m.get('kernel'), m.get('os'))],
        ['Load average at start / end', '%s / %s' % (' '.join('%.2f' % x for x in m.get('loadavg_start', [])),
                                                     ' '.join('%.2f' % x for x in m.get('loadavg_end', [])))],
        ['Tools', '%s; %s; libipt %s; %s' % (m.get('perf'), m.get('zstd'), m.get('libipt'), m.get('gcc'))],
        ['ptraced', 'commit %s, %s build (`%s`)' % (m.get('commit'), m.get('buildtype') or '?', m.get('build_dir'))],
        ['Run', '%s, `%s`' % (m.get('date_utc'), m.get('command'))],
    ]
    t = m.get('timings', {})
    if t:
        parts = ['build %s' % fmt_dur(t.get('build_s'))]
        for s in m.get('sections', []):
            if s + '_s' in t:
                parts.append('%s %s' % (s, fmt_dur(t[s + '_s'])))
        rows.append(['Duration', '%s in all (%s)' % (fmt_minutes(t.get('total_s')), ', '.join(parts))])
    out.append(table(['', ''], rows))
    out.append('')
    return out


def fmt_dur(s):
    return 'n/a' if s is None else '%.0f s' % s if s >= 10 else '%.1f s' % s


def fmt_minutes(s):
    if s is None:
        return 'n/a'
    return '%d min %02d s' % (int(s) // 60, int(s) % 60)


def render(indir):
    m = load(indir, 'machine')
    dec = load(indir, 'decode')
    rp = load(indir, 'realpt')
    snap = load(indir, 'snapshot')
    sb = load(indir, 'sideband')
    trig = load(indir, 'trigger')
    notes, headlines = [], []

    body = []
    body += decode_section(dec, notes, headlines)
    body += snapshot_section(snap, notes, headlines, m.get('nproc') if m else None)
    body += sideband_section(sb, notes, headlines)
    body += trigger_section(trig, notes, headlines)
    body += realpt_section(rp)

    out = ['# Benchmarks', '',
           '<!-- Generated by tests/bench/report.py from the JSON tests/bench/run-all wrote. Do not edit: '
           'run ./dev.sh bench. -->', '',
           '**This file is generated by `./dev.sh bench` (tests/bench/run-all, then tests/bench/report.py) and '
           'never edited by hand.** Every number below comes from the run described under Machine: each figure '
           'is the median of 5 runs after one warm-up run, with [min–max] of those runs; the runs of the tools '
           'compared in one table alternate, so a change of the machine\'s load affects them alike.', '']
    if m and m.get('quick'):
        out += ['> **Quick smoke run** (`--quick`): small sizes, short windows. It shows that every benchmark runs; '
                'its figures are not the project\'s. Run `./dev.sh bench` for those.', '']
    if m and m.get('loadavg_start', [0])[0] >= 1.5:
        out += ['> **The machine was busy**: load average %.2f at the start of the run (%d CPUs). Other work '
                'competed with every measurement; regenerate on a quiet machine before quoting these figures.' %
                (m['loadavg_start'][0], m.get('nproc', 0)), '']
    out += machine_section(m)

    out += ['## How to reproduce', '',
            '```sh',
            './dev.sh bench                 # everything: build-bench/ (release), all sections, this file',
            './dev.sh bench --quick         # smoke test, a few minutes, writes tests/bench/out/quick/',
            'tests/bench/run-all build-bench --sections decode,snapshot --keep   # a subset, keep the bundles',
            'tests/bench/report.py --in tests/bench/out --out BENCHMARKS.md      # the report from the raw JSON',
            '```', '',
            'Raw results: tests/bench/out/*.json (not in git). The exact command of every figure is in its '
            'table or the paragraph above it.', '']

    if headlines:
        out += ['## Headline figures', '']
        rows = []
        for what, value, goal, met in headlines:
            rows.append([what, value, goal or '', '' if met is None else ('met' if met else '**not met**')])
        out += [table(['', 'measured', 'goal', ''], rows), '']

    out += body

    out += ['## Reading', '']
    if notes:
        out += ['* ' + n for n in notes]
        out.append('')
    out += READING
    return '\n'.join(out).rstrip() + '\n'


# What stays true whatever the numbers are: the structure behind them.
READING = [
    'Why the figures come out as they do (the structure behind them, true whatever the run measured):',
    '',
    '* **ptctl against perf script.** Both decode the trace block by block (ptctl with its own block decoder '
    'over libipt\'s query decoder, `--decoder=fast`, proven to print what libipt\'s block decoder prints by '
    'test-decode-equal-paths; perf with its own intel-pt decoder). ptctl splits each CPU\'s trace at PSB '
    'packets, decodes the segments on `--jobs` worker threads and writes their output in order; perf script '
    'decodes on one thread, interleaving the CPUs\' streams in time order, and passes every branch through its '
    'generic sample and printing path. ptctl maps the decompressed trace from a temporary file and gives its '
    'pages back as the index and the workers finish with them, so its peak RSS is the segments in flight, the '
    'images and the caches; perf script streams.',
    '* **ptctl against the plain libipt loop.** The plain loop is what a libipt user writes first: sync, next '
    'block, count, no output. ptctl in addition checks the bundle\'s SHA-256 sums, indexes every PSB (a walk of '
    'every packet), follows which process and thread ran, and formats and writes every branch as a line of '
    'text. Its decoder replaces libipt\'s instruction walk with a cache of decoded runs but keeps libipt\'s query '
    'decoder, so packets, times and events stay libipt\'s.',
    '* **Issue 20\'s decode goals, where not met** (profiles of 2026-11-26, callgrind on `ptctl decode -q '
    '--jobs 1` of 4 MiB ptsynth bundles; `perf record -e cpu-clock` agrees). Kernel-only, `--format=summary`: '
    'the whole run 2.53 G instructions against the plain loop\'s 2.39 G and libipt\'s block-decoder path\'s '
    '3.50 G. Of ptctl\'s, the fast flow is 1.11 G (libipt\'s query decoder in it: pt_qry_event alone 376 M for '
    '184 k events), the PSB index 361 M (14%), the SHA-256 check 301 M (12%), the per-block worker (attribution, '
    'loop check asking libipt the offset every block) about 220 M. What would close the gap: a packet decoder of '
    'our own in place of libipt\'s query decoder (checked against it by the same equality suite), the PSB index '
    'folded into the decode instead of a separate walk, runs linked to their successors so the walk skips the '
    'hash, and the offset handed over by the flow. User-only `user-16M-s2` is mostly packets (2.6 M instructions in 16 MiB of '
    'trace, 6 bytes an instruction against kerneluser-16M-s1\'s 0.15), so its time is walking packets: a '
    'profile of `--jobs 1` on it (2026-11-27, `perf record`) has decode_starts_scan at 10% (each segment\'s '
    'packets walked once more, to find where decoding may start and its time), the PSB index\'s walk 6% '
    '(index_cpu), libipt\'s packet decoder under both walks 6% (pt_pkt_next, pt_pkt_get_offset), libipt\'s '
    'query decoder and the flow most of the rest; the three walks of '
    'every packet would become one with the index and the start scan folded into the decode. '
    '`--format=branches` against perf script (≥ 50×) needs all of that, and rendering in parallel: at 100+ M instructions a second perf\'s decode is 10-20× behind ptctl, '
    'and the text of one branch costs ptctl about as much as its decode. `--format=calls` against branches: '
    'libdw\'s dwfl_module_addrinfo scanned the whole symbol table once per distinct function (39% of calls on '
    'a 4 MiB bundle); the symbolizer now searches a per-module table that answers as libdw does '
    '(client/decode/symtab.c), the rest is the calls text, written on the one output thread. A profile of '
    '2026-11-27 (`perf record -g` on `--format=calls --jobs 2`, kerneluser-16M-s1) showed that thread as the '
    'critical path, 44% of the samples against the two workers\' 27-28% each; its per-line costs (the thread '
    'name\'s strlen, out-of-line buffer appends, printf of every new time, strcmp of DSO names) were cut, and '
    'it is now about as busy as each worker. What would take calls further: rendering calls in the workers, '
    'each segment from the call stack its CPU\'s previous segment left, which needs that stack before the '
    'segment is decoded.',
    '* **Snapshot.** Freezing is one disable ioctl per CPU on the event loop thread, before anything else. '
    'Each copy thread (one per online CPU but one, at most 16) is handed one frozen CPU as soon as it is '
    'disabled and copies it while the loop disables the next; the other CPUs are handed out only when all are '
    'frozen, and the freezing thread copies too, so our own threads never outnumber the cores nor preempt '
    'the disable loop. When earlier copies show that copying '
    'every CPU but the last fits in 50 µs, each CPU is instead disabled, copied and re-enabled in turn, so no '
    'CPU is dark longer than its own copy. On a real machine each traced CPU\'s copy gets a core; with many '
    'emulated CPUs on two cores the copies queue, which shows in the blackout and trigger→all thawed columns '
    'as the number of emulated CPUs grows. The emulated PMU stands in for hardware that costs no CPU: '
    'each emulated DISABLE spins for an IPI (20 µs) and then generates the trace the hardware would have '
    'written since the CPU\'s last ENABLE (the DISABLE column); the benchmark paces that trace to 32 MiB/s '
    'summed over all emulated CPUs (the "production/CPU" column). The trigger→frozen columns hold every '
    'CPU\'s emulated DISABLE, and so does the blackout of a CPU whose copy waits for the other CPUs to be '
    'frozen. A real PERF_EVENT_IOC_DISABLE is an IPI to the traced CPU (pt_event_stop() there). The '
    'blackout column is ptraced\'s own time (DISABLE returned to ENABLE asked for); the ENABLE column, the '
    'emulated IPI, comes on top on the emulated PMU as a real IPI does on hardware. The back-to-back memcpy '
    'copies a buffer that was just copied (warm in the caches and the TLB); the recorder copies ring bytes '
    'it has not touched since the hardware wrote them, into memory it has not touched since it prefaulted '
    'it, after the loop slept: the memcpy after the same idle is that situation without the recorder. Copies '
    'made at once share the memory bandwidth: on a 2-core VM two 16 MiB copies at once each took about twice '
    'as long as one alone, which is what the "as many at once" column measures beside every run.',
    '* **Bundle writing.** The bundle writer compresses with zstd level 1 like `zstd -1`, and also hashes every '
    'member (SHA-256, on a second thread), writes the tar and the manifest, and makes the file durable before '
    'linking it into place; sizes differ by the tar and manifest overhead and the per-member compression '
    'frames.',
    '* **Side-band.** The kernel writes the records (FORK, COMM, MMAP2, EXIT, switches) in the context of the '
    'processes that cause them, for both tools alike; what each tool pays is reading them. ptraced copies each '
    'record into its side-band log as it reads it (its time read, an MMAP2\'s file looked up for its build-id '
    'once per device and inode) and folds the log into its process model lazily: before a snapshot, when the '
    'log nears its memory bound, and as records leave the retention (twice the lookback the rings hold, 30 s '
    'while no trace rate is measured, as in this benchmark, which turns the rate probes off); `perf record ... '
    '-o /dev/null` copies the ring\'s bytes to /dev/null and reads none of them. ptraced also runs its emulated '
    'PMU in the same process here, which its "CPU (all threads)" includes.',
    '* **Issue 20\'s side-band goal, not met** (measured 2026-11-27 with this configuration and `bench-loadgen '
    '--rate 1000` for 45 s). The event loop took 1.2-1.6 ms of CPU a second both while the log grew (its first '
    '32 s; RSS from 30 to 93 MiB) and once it held its retention and reused its chunks (RSS flat), so the '
    'growth (a chunk mapped and populated every few hundred ms) is not the cost. `perf stat` on the event loop '
    'thread over 10 s at the steady state: 12-14 wake-ups a second, 1.5-1.8 ms of CPU a second, so about '
    '130 µs a wake-up. `perf record --call-graph dwarf` of that thread: 14% was perf_record_parse under '
    'drop_head(), every record of a dropped chunk parsed to remember who ran on its CPU, which only '
    'switches and ITRACE_STARTs can say; it now reads those alone (a tenth less CPU in two runs each). '
    'Sorting the records folded into the model as they leave the retention (glibc\'s msort and the '
    'comparison) was 11%; the catch-up now merges the ascending runs the rings were drained in (a few percent '
    'less). What remains: reading the rings (perf_ring_next, each record\'s time, its copy into the log), the '
    'scheduler and epoll at each wake-up (each CPU\'s 512 KiB ring woke the loop at its quarter-full '
    'watermark about 5 times a second, strace: some 1.3 KB of records per fork+exec), and the fold of the '
    'records that survive. What '
    'would close it: wake-ups at half the ring as perf record does (fewer by half, less slack for a loop busy '
    'with a snapshot), and a drain that copies a ring\'s bytes in one go and indexes them after. That would '
    'still leave ptraced several times perf: reaching 2× needs ptraced to keep records without ever reading them, as perf record does, '
    'which a recorder that carries its process model across the retention cannot: every record is read as it '
    'arrives (its time, for the log\'s order) and folded in before it is dropped.',
    '* **Triggers.** The BPF program decides in the kernel and writes to a BPF ring buffer; the daemon wakes on '
    'its epoll fd and freezes. With SCHED_OTHER the wake-up can wait for the running task\'s time slice on a '
    'busy CPU, which is what the tail shows on a loaded machine; SCHED_FIFO takes that wait away for the event '
    'loop thread.',
]


def main():
    ap = argparse.ArgumentParser(description='Write BENCHMARKS.md from run-all\'s raw JSON.')
    ap.add_argument('--in', dest='indir', required=True, help='directory with the JSON files')
    ap.add_argument('--out', help='output file (default: standard output)')
    args = ap.parse_args()
    text = render(args.indir)
    if args.out:
        tmp = args.out + '.tmp'
        with open(tmp, 'w') as f:
            f.write(text)
        os.replace(tmp, args.out)
    else:
        sys.stdout.write(text)


if __name__ == '__main__':
    main()
