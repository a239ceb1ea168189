"""The workflow config as code: validation, seed families and budgets (standard library and yaml only)."""
