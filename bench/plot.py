"""Latency over time of make bench's fixed-rate runs, one panel per contender, so spikes show.

    python bench/plot.py bench/results/<run>   ->   bench/results/<run>/latency.png
"""
import csv
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["node-baseline", "v8go", "stack-uncached", "stack-cached", "node-baseline-db", "v8go-db", "shop-uncached",
         "node-baseline-unstreamed", "stack-unstreamed", "node-baseline-stream", "stack-stream",
         "node-baseline-stream-300", "stack-stream-300"]
COMPRESSED = "+compressed"  # runs with a browser's Accept-Encoding (bench/bench.sh)


def order(path):
    """Contender order, identity before compressed; unknown names last."""
    name = path.name.removesuffix("-fixed.csv")
    contender = name.removesuffix(COMPRESSED)
    return (ORDER.index(contender) if contender in ORDER else len(ORDER), name.endswith(COMPRESSED), name)


run = pathlib.Path(sys.argv[1])
series = {}
for path in sorted(run.glob("*-fixed.csv"), key=order):
    points = []
    with path.open() as f:
        for row in csv.DictReader(f):
            # Only the measured scenario: the warm-up is left out, as in the thresholds.
            if row["metric_name"] == "http_req_duration" and row.get("scenario") == "load":
                points.append((float(row["timestamp"]), float(row["metric_value"])))
    if points:
        t0 = points[0][0]
        series[path.name.removesuffix("-fixed.csv")] = [(t - t0, v) for t, v in points]

fig, axes = plt.subplots(len(series), 1, figsize=(10, 2.4 * len(series)), sharex=True, sharey=True, squeeze=False)
for ax, (name, points) in zip(axes[:, 0], series.items()):
    ax.scatter([t for t, _ in points], [v for _, v in points], s=2, alpha=0.4)
    ax.set_yscale("log")
    ax.set_ylabel("ms")
    ax.set_title(name, fontsize=10, loc="left")
    ax.grid(True, which="both", alpha=0.3)
axes[-1, 0].set_xlabel("seconds into the fixed-rate run")
fig.tight_layout()
fig.savefig(run / "latency.png", dpi=110)
