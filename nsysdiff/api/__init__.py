"""The entry points the CLI, the GitHub Action and notebooks share.

:func:`diff` is the whole pipeline of ``nsysdiff diff``: two sides read (per the rule
packs' step range, with its fallbacks), compared, judged against the rules and their noise
profile, comparability and waivers applied; the command parses its arguments, calls it,
writes the report and exits with its code, so a notebook gets the command's verdict.
:func:`load`, :func:`compare`, :func:`check` and :func:`judge` are its low-level steps.
"""

from nsysdiff.api.frames import (
    api_frame,
    attribution_frame,
    categories_frame,
    copies_frame,
    diff_copies_frame,
    diff_frame,
    families_frame,
    findings_frame,
    history_changes_frame,
    history_frame,
    kernels_frame,
    nvtx_frame,
    run_values_frame,
    runs_frame,
    step_calls_frame,
    steps_frame,
    sync_frame,
)
from nsysdiff.api.history import (
    history_add,
    history_baseline,
    history_changes,
    history_dashboard,
    history_store_path,
    history_trend,
    open_history,
)
from nsysdiff.api.judging import check, compare, compare_run_sets, inconclusive_reasons, judge
from nsysdiff.api.pipeline import DiffOptions, Side, diff, history_spec
from nsysdiff.api.reading import fingerprint_trace, load, load_job, load_noise_profile, load_runs, noise_profile
from nsysdiff.compare.diff import Diff, Settings
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.fingerprint.runset import RunSet
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.rules.report import Report
from nsysdiff.trace.launches import Grouping

# The public API: what a notebook, the GitHub Action and the command line call, and the
# types their arguments and results are made of.
__all__ = [
    "Diff",
    "DiffOptions",
    "Fingerprint",
    "Grouping",
    "Report",
    "RunSet",
    "ScopeOptions",
    "Settings",
    "Side",
    "api_frame",
    "attribution_frame",
    "categories_frame",
    "check",
    "compare",
    "compare_run_sets",
    "copies_frame",
    "diff",
    "diff_copies_frame",
    "diff_frame",
    "families_frame",
    "findings_frame",
    "fingerprint_trace",
    "history_add",
    "history_baseline",
    "history_changes",
    "history_changes_frame",
    "history_dashboard",
    "history_frame",
    "history_spec",
    "history_store_path",
    "history_trend",
    "inconclusive_reasons",
    "judge",
    "kernels_frame",
    "load",
    "load_job",
    "load_noise_profile",
    "load_runs",
    "noise_profile",
    "nvtx_frame",
    "open_history",
    "run_values_frame",
    "runs_frame",
    "step_calls_frame",
    "steps_frame",
    "sync_frame",
]
