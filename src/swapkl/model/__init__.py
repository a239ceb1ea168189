"""The model side: loading a checkpoint, the probe engine, the batch loop, KL and head slices."""
