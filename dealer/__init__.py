"""The trusted dealer: correlated randomness for the computing parties (offline phase)."""
