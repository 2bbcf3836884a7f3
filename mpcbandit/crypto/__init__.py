"""Cryptographic building blocks: AES-GCM, Paillier, key agreement, keyed streams, orthogonal masks."""
