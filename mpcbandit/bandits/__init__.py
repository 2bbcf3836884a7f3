"""Plaintext reference bandit algorithms (numpy), used by protocols and tests."""
