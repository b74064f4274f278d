# %% [markdown]
# # nsysdiff in a notebook: the H100 pair, batch size 1 against 16
#
# The two real captures in `examples/h100/` (nsys 2025.3, one H100) run the same request
# through a small Llama-shaped decoder alone and in a batch of 16. This notebook finds the
# batch-invariance suspects as DataFrames, plots every kernel family's ratio against the
# scale, and shows the decode steps. It is `h100.ipynb` as a plain script: the suite runs
# it and checks its output (`tests/frames/test_notebook.py`).
#
# Needs `pip install "nsysdiff[pandas]" matplotlib`.

# %%
import os
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")  # a file, not a window: the same figure in a notebook, a script and CI
import matplotlib.pyplot as plt
import pandas as pd

import nsysdiff.api as nd

pd.options.display.width = 100
pd.options.display.max_columns = 12
pd.options.display.max_colwidth = 40
# The examples beside this file, wherever it runs from: a script knows its own place, and
# Jupyter runs a notebook in the notebook's directory.
WHERE = Path(globals().get("__file__", "h100.ipynb")).resolve().parent
HERE = Path(os.environ.get("NSYSDIFF_EXAMPLES", WHERE.parent)) / "h100"
OUT = Path(os.environ.get("NSYSDIFF_NOTEBOOK_OUT", "."))

# %% [markdown]
# ## One trace: where the kernel time goes

# %%
bs1 = nd.load(HERE / "bs1.sqlite")
bs16 = nd.load(HERE / "bs16.sqlite")
kernels = nd.kernels_frame(bs1)
print(kernels[["Name", "Category", "Instances", "Total Time (ns)", "Med (ns)"]].head(5).to_string(index=False))
categories = nd.categories_frame(bs1)
print(categories[["Category", "Instances", "Total Time (ns)", "Time (%)"]].round(1).to_string(index=False))

# %% [markdown]
# ## Two traces: what scaled abnormally
#
# Every family's ratio (candidate / base kernel time) against the overall scale: a
# deviation of 1.0 scales like the trace; the outlier test flags what lies far outside.

# %%
diff = nd.compare(bs1, bs16)
info = diff.headline.scale_info
print(f"kernel time {bs1.kernel_ns / 1e6:.2f} ms -> {bs16.kernel_ns / 1e6:.2f} ms; scale {info.factor:.2f}x")
families = nd.diff_frame(diff, "families")
both = families.dropna(subset=["Ratio"])
cols = ["Family", "Base Total Time (ns)", "Ratio", "Deviation", "Outlier Score", "Verdict"]
print(both.sort_values("Deviation", ascending=False)[cols].head(6).round(2).to_string(index=False))

# %% [markdown]
# ## The batch-invariance suspects
#
# The outliers, the kernels that exist on one side only (a GEMM or attention variant
# swapped with the batch size), and what the `batch-invariance` pack concludes.

# %%
rows = nd.diff_frame(diff)
print("outliers:", ", ".join(rows.loc[rows["Outlier"], "Name"]))
swapped = nd.attribution_frame(diff)
swapped = swapped[(swapped["New (ns)"] != 0) | (swapped["Removed (ns)"] != 0)]
print(swapped[["Name", "New (ns)", "Removed (ns)"]].to_string(index=False))
report = nd.check(diff, ["batch-invariance"])
findings = nd.findings_frame(report)
print(f"batch-invariance: exit {report.exit_code}")
print(findings.loc[findings["Fails"], ["Level", "Rule", "Subject"]].to_string(index=False))

# %% [markdown]
# ## The picture: every family against the scale

# %%
fig, ax = plt.subplots(figsize=(7, 4))
share = both["Base Total Time (ns)"] / both["Base Total Time (ns)"].sum()
ax.scatter(share, both["Ratio"], s=18, color="tab:blue", label="family")
out = both[both["Verdict"] == "outlier"]
ax.scatter(
    out["Base Total Time (ns)"] / both["Base Total Time (ns)"].sum(),
    out["Ratio"],
    s=60,
    facecolors="none",
    edgecolors="tab:red",
    label="outlier",
)
low, high = info.low, info.high
ax.axhspan(low, high, color="tab:gray", alpha=0.2, label="half the weight")
ax.axhline(info.factor, color="tab:gray", label=f"scale {info.factor:.2f}x")
for _, row in out.iterrows():
    ax.annotate(
        row["Family"],
        (row["Base Total Time (ns)"] / both["Base Total Time (ns)"].sum(), row["Ratio"]),
        xytext=(6, -4),
        textcoords="offset points",
        fontsize=8,
        color="tab:red",
    )
ax.set(xscale="log", yscale="log", xlabel="share of base kernel time", ylabel="ratio bs16 / bs1")
ax.set_yticks([1, 1.5, 2, 3, 4, 6])
ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%gx"))
ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
ax.set_ylim(0.8, both["Ratio"].max() * 1.3)
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
fig.savefig(OUT / "families.png", dpi=100, bbox_inches="tight")
print(f"plotted {len(both)} families, {len(out)} outlier(s)")

# %% [markdown]
# ## The decode steps
#
# Read per `decode_step` NVTX range, each step's period (start to the next start: what a
# user waits per token) splits exactly into GPU compute, launch-bound and host time, and
# the time between steps (docs/steps.md).

# %%
per_step = nd.ScopeOptions(per="decode_step")
steps = nd.steps_frame(nd.load(HERE / "bs16.sqlite", per_step))
parts = [
    "Compute (ns)",
    "Communication (ns)",
    "Copies (ns)",
    "Launch-bound (ns)",
    "Sync (ns)",
    "Host (ns)",
    "Between (ns)",
]
assert (steps[parts].sum(axis=1) == steps["Period (ns)"]).all()
print(
    steps[["Step", "Period (ns)", "Compute (ns)", "Launch-bound (ns)", "Host (ns)", "launch Calls"]].to_string(
        index=False
    )
)
print("mean per step:")
print((steps[parts].mean() / 1e6).round(3).rename(lambda part: part.replace("(ns)", "(ms)")).to_string())
