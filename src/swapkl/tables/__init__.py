"""Tables: schemas, atomic Parquet writing and reading, provenance, file checks and locks."""
