"""The shipped YAML rule base: one file per category, example logs under examples/."""
