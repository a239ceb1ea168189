"""Accuracy-based layer relevance ("Rethinking Layer Relevance"): tasks, scoring and statistics."""
