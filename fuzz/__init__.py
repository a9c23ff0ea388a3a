"""Coverage-guided fuzzing of kdissect's entry points (see fuzz/README.md)."""
