"""Secret scanning: the engine (detect-secrets behind a prefilter) and the scan stage."""
