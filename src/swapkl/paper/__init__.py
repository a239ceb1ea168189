"""The published study's own inputs and text rules, and the reproduction scorecard."""
