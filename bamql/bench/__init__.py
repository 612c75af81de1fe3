"""The benchmark harness: the same queries through bamql and baselines, on the same data."""
