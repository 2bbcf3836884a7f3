"""Prg's ring elements and bytes are the AES-256-CTR keystream of its seed, in order and
without a gap, whatever the sizes drawn (written straight into the array's memory since the
service's dealer draws megabytes a second), each array its caller's own (writable); a Prg
continued from a position (a checkpoint) goes on with the same stream."""

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpcbandit.mpc.prg import Prg

SEED = bytes(range(100, 132))


def test_draws_of_every_size_are_the_keystream_in_order_and_writable():
    sizes = [(5,), (3, 4), (0,), (64, 10, 20), (2, 0), (1,), (20_000,), (7, 3, 3)]
    prg = Prg(SEED)
    drawn = []
    for k, shape in enumerate(sizes):
        x = prg.ring(shape)
        assert x.shape == shape and x.dtype == np.uint64 and x.flags.writeable
        drawn.append(x.astype("<u8").tobytes())
        drawn.append(prg.bytes(k + 1))   # bytes between rings: no gap, no overlap
    stream = Cipher(algorithms.AES(SEED), modes.CTR(b"\0" * 16)).encryptor().update(
        bytes(sum(map(len, drawn))))
    assert b"".join(drawn) == stream and prg.position == len(stream)
    later = Prg.at(SEED, prg.position).ring(9)
    again = Cipher(algorithms.AES(SEED), modes.CTR(b"\0" * 16)).encryptor().update(
        bytes(len(stream) + 72))[len(stream):]
    assert later.astype("<u8").tobytes() == again
