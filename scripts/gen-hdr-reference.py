#!/usr/bin/env python3
"""Write testdata/perf-merge/hdrhistogram-python.json: a latency histogram
encoded by a reference implementation of HDR histogram (the Python package
`hdrhistogram`, pinned below), which `perf merge` must read like its own
(docs/spec/cli.md, "Mergeable results"). The test in src/perf/histogram.rs
decodes it and checks the counts and percentiles against values derived by
hand from the samples listed here, not from this script's output.

    python3 -m pip install hdrhistogram==0.10.8
    python3 scripts/gen-hdr-reference.py

The encoding is deterministic for a given zlib; the committed file keeps
the test meaningful without Python.
"""

import json
import os

from hdrh.histogram import HdrHistogram

PACKAGE = "hdrhistogram==0.10.8"
# (value in µs, count): 100 samples
SAMPLES = [(100, 50), (1000, 40), (10000, 9), (2000000, 1)]


def main():
    # perf's histograms: 1 µs .. 1 hour, 3 significant digits
    h = HdrHistogram(1, 3_600_000_000, 3)
    for value, count in SAMPLES:
        h.record_value(value, count)
    encoded = h.encode()
    if isinstance(encoded, bytes):
        encoded = encoded.decode("ascii")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = os.path.join(root, "testdata", "perf-merge", "hdrhistogram-python.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    doc = {
        "generator": "scripts/gen-hdr-reference.py with " + PACKAGE,
        "lowest": 1,
        "highest": 3_600_000_000,
        "significant_digits": 3,
        "samples": SAMPLES,
        "encoded": encoded,
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
