"""Cryptographic building blocks for samba: AES-GCM, Paillier, key agreement, keyed streams."""
