"""Probes: protocols and pairs, the probe run and its resume state, aggregation and pair statistics."""
