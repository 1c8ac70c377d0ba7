"""Lineage: array layouts (`arrays`) and the persistent, read-only store (`store`)."""
