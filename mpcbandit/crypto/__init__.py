"""Cryptographic building blocks that are not secret sharing (masks, encryption wrappers)."""
