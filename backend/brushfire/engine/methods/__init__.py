"""The ways of answering an update, one module each, its cost estimate next to its
executor (the planner, engine/planner.py, is a pure choice among their plans):

- base: no active filter applies to the view: its base result;
- cube: one filter applies and has a group-by push-down cube to the view;
- conditional: a conditional cube of the moving filter given the others (built in the
  background, engine/builders.py);
- incremental: only the rows whose pass/fail on the moving filter changed;
- recompute: each view from the rows of its most selective filter;
- mixed: some views recomputed, the others incremental;
- complement: a cube of one filter less the rows failing the others;
- scan: every row, sequentially.

An executor takes the session (engine/session.py) it answers for: its filter state, its
aggregates and its reads (engine/reads.py: the kernels on the pool).
"""
