"""Recovery: healing a changed model and scoring it against its base."""
