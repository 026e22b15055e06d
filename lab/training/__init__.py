"""Training code for the bundled models (not installed; run from the repo root)."""
