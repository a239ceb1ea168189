"""Statistics shared by every stage: bootstrap, intervals, seeds and covariates."""
