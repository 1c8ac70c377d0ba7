"""The sizes the engine supports, in one place: `brushfire validate` checks a spec against
them (file, line and key of the part over the limit), the engine relies on them, and
docs/spec.md ("Limits") lists them.

Bars are numbered in 16 bits with one value kept for "no bar" (a row the view drops) and
one for the `(other)` bar; filters are bits of a 64-bit per-row mask.
"""

from __future__ import annotations

MAX_BARS = 65_534  # bars of one view; a heatmap's cells (x bars × y bars) count as its bars
MAX_FILTERS = 64  # brushable views in crossfilter groups, plus parameters, per dashboard
MAX_TOP = 1_000  # a categorical view's `top`
MAX_DROPDOWN_VALUES = 65_534  # distinct values of a dropdown parameter's field (checked at capture)
