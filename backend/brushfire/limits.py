"""The sizes the engine supports, in one place: `brushfire validate` checks a spec against
them (file, line and key of the part over the limit), the engine relies on them, and
docs/spec.md ("Limits") lists them.

Keys and bars are numbered in 16 bits with one value kept for "no value" (a row the view
drops) and one for an empty selection; filters are bits of a 64-bit per-row mask, one
bit of which the engine keeps for lineage queries (the rows behind bars of a view).
"""

from __future__ import annotations

MAX_BARS = 65_534  # bars of one view; a heatmap's cells (x bars × y bars) count as its bars
MAX_FILTERS = 63  # brushable views in crossfilter groups, plus parameters, per dashboard
MAX_TOP = 1_000  # a categorical view's `top`
MAX_DROPDOWN_VALUES = 65_534  # distinct values of a dropdown parameter's field (checked at capture)
# a spec file's bytes: real specs are a few KB (the gallery's largest 2.6 KB); reading and
# validating takes about 2 s per MB, so a bigger file is refused before it is read
MAX_SPEC_BYTES = 1_000_000

# Requests (docs/protocol.md): a protocol message and a session's Python API are held to the
# same ones (engine/api.py checks them), whichever front asks.
MAX_PAGE_ROWS = 10_000  # rows of one details or dimension page
DEFAULT_PAGE = 100  # details rows per page when the spec declares no details (answered lazily)
MAX_PAGE = 2**31 - 1  # a page's number
MAX_FORWARD_RIDS = 10_000  # row ids of one forward request
