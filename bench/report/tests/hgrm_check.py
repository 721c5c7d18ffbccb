#!/usr/bin/env python3
"""Checks lockbench's `.hgrm` files against their `.hdr` twins with an independent
implementation: the `hdrhistogram` package from PyPI (module `hdrh`) decodes each V2-deflate
`.hdr`, this script restates Java's `PercentileIterator` over the decoded counts and prints every
line as Java's `AbstractHistogram.outputPercentileDistribution(out, 5, 1000.0)` formats it
(Java's `%f` rounds the shortest decimal repr half up, unlike C's printf), and
the `.hgrm` written by lockbench must equal that text line for line (header, rows with the
cumulative TotalCount, Mean/StdDeviation, Max/Total count and Buckets/SubBuckets footer).

hdrh's own output_percentile_distribution is not used as the reference: its tick schedule
omits Java's integer truncation of log2 and its footer differs from Java's.

Usage: hgrm_check.py RUN_DIR_OR_HISTOGRAMS_DIR...   (exit 1 on any difference)
"""
from decimal import ROUND_HALF_UP, Decimal
import math
import os
import pathlib
import struct
import sys

try:
    from hdrh.histogram import HdrHistogram
except ImportError:
    # The project's virtual environment has it (scripts/install-test-deps): run there instead.
    VENV = pathlib.Path(__file__).resolve().parents[3] / ".venv" / "bin" / "python3"
    if VENV.exists() and pathlib.Path(sys.executable) != VENV:
        os.execv(VENV, [str(VENV), *sys.argv])
    sys.exit("hgrm_check: the `hdrhistogram` package (PyPI) is missing: run scripts/install-test-deps")

TICKS = 5
SCALE = 1000.0
# V2 compressed encoding: a big-endian cookie and the deflated payload's length, then the payload.
V2_COMPRESSED_COOKIE = 0x1C849304


def decode(path):
    blob = path.read_bytes()
    cookie, length = struct.unpack(">ii", blob[:8])
    if cookie & ~0xF0 != V2_COMPRESSED_COOKIE or length != len(blob) - 8:
        raise ValueError("%s is not a V2-deflate histogram (cookie %#x, length %d of %d)"
                         % (path, cookie, length, len(blob) - 8))
    return HdrHistogram.decode(blob[8:], b64_wrap=False)


def java_rows(h):
    """(value, percentile level, total count to value) as Java's PercentileIterator yields."""
    total = h.get_total_count()
    rows = []
    if total == 0:
        return rows
    level = 0.0
    done = False
    for item in h.get_recorded_iterator():
        cumulative = item.total_count_to_this_value
        while 100.0 * cumulative / total >= level:
            rows.append((item.value_iterated_to, level, cumulative))
            halvings = int(math.log(100.0 / (100.0 - level)) / math.log(2))
            level += 100.0 / (TICKS * int(math.pow(2, halvings + 1)))
            if cumulative >= total:
                done = True
                break
        if done:
            break
    rows.append((h.get_max_value(), 100.0, total))
    return rows


def jf(x, d):
    """`%.{d}f` as Java's Formatter prints it: the shortest repr's digits, rounded half up."""
    return format(Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP), "f")


def java_mean_stddev(h):
    """Java's getMean()/getStdDeviation(): median equivalents summed, then divided."""
    total = h.get_total_count()
    if not total:
        return 0.0, 0.0
    items = [(h._hdr_median_equiv_value(i.value_iterated_to), i.count_at_value_iterated_to)
             for i in h.get_recorded_iterator()]
    mean = sum(float(v) * c for v, c in items) / total
    dev = sum((v - mean) * (v - mean) * c for v, c in items)
    return mean, math.sqrt(dev / total)


def java_text(h):
    d = h.significant_figures
    out = ["%12s %14s %10s %14s" % ("Value", "Percentile", "TotalCount", "1/(1-Percentile)"), ""]
    for value, level, count in java_rows(h):
        q = level / 100.0
        if level != 100.0:
            out.append("%12s %2s %10d %14s" % (jf(value / SCALE, d), jf(q, 12), count,
                                               jf(1 / (1.0 - q), 2)))
        else:
            out.append("%12s %2s %10d" % (jf(value / SCALE, d), jf(q, 12), count))
    mean, stddev = java_mean_stddev(h)
    out.append("#[Mean    = %12s, StdDeviation   = %12s]" % (jf(mean / SCALE, d), jf(stddev / SCALE, d)))
    out.append("#[Max     = %12s, Total count    = %12d]"
               % (jf(h.get_max_value() / SCALE, d), h.get_total_count()))
    out.append("#[Buckets = %12d, SubBuckets     = %12d]" % (h.bucket_count, h.sub_bucket_count))
    return out


def check(hdr):
    hgrm = hdr.with_suffix(".hgrm")
    if not hgrm.exists():
        return ["%s: no %s beside it" % (hdr, hgrm.name)]
    h = decode(hdr)
    want = java_text(h)
    got = hgrm.read_text().split("\n")
    if got and got[-1] == "":
        got.pop()
    errors = []
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else "<no line>"
        g = got[i] if i < len(got) else "<no line>"
        if w != g:
            errors.append("%s line %d:\n  want %r\n  got  %r" % (hgrm, i + 1, w, g))
            if len(errors) >= 5:
                break
    # The rows' own invariants, stated directly: counts are cumulative and end at the total.
    counts = [int(line.split()[2]) for line in got[2:] if line and not line.startswith("#")]
    if counts != sorted(counts) or (counts and counts[-1] != h.get_total_count()):
        errors.append("%s: TotalCount is not cumulative up to %d" % (hgrm, h.get_total_count()))
    return errors


def main(args):
    files = []
    for a in args:
        p = pathlib.Path(a)
        if p.is_file():
            files.append(p)
        else:
            base = p / "histograms" if (p / "histograms").is_dir() else p
            files.extend(sorted(base.glob("*.hdr")))
    if not files:
        sys.exit("hgrm_check: no .hdr files in %s" % " ".join(args))
    errors = []
    for f in files:
        errors.extend(check(f))
    for e in errors:
        print(e)
    print("hgrm_check: %d histogram(s), %d difference(s)" % (len(files), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
