#!/usr/bin/env python3
"""Prints the median of every Criterion benchmark in target/criterion as a Markdown table.

Run after `cargo bench -p dlbridge-benches` (`make bench` does both).
"""

import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
rows = []
for estimates in sorted(root.glob("*/new/estimates.json")):
    median = json.loads(estimates.read_text())["median"]
    interval = median["confidence_interval"]
    rows.append(
        f"| `{estimates.parent.parent.name}` | {median['point_estimate']:.1f} ns "
        f"| {interval['lower_bound']:.1f} – {interval['upper_bound']:.1f} ns |"
    )
if not rows:
    sys.exit(f"no Criterion results under {root}; run `cargo bench -p dlbridge-benches` first")
print("| benchmark | median | 95% interval of the median |")
print("|---|---|---|")
print("\n".join(rows))
