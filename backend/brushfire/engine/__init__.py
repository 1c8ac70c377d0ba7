"""The engine: per-session crossfilter state answered from the lineage store."""
