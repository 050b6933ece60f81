"""Integer code: table-driven CRC-32 of many messages at once, the splitmix64 hash of a
counter array, and Conway's game of life. Integer results are exact on every engine."""

import numpy as np

from .registry import program, rng


def _crc_table():
    table = np.zeros(256, dtype=np.uint32)
    for byte in range(256):
        value = byte
        for _ in range(8):
            value = (value >> 1) ^ 0xEDB88320 if value & 1 else value >> 1
        table[byte] = value
    return table


CRC_TABLE = _crc_table()


def _messages_inputs(size):
    count, length = (16, 12) if size == "small" else (100_000, 64)
    return rng().integers(0, 256, (count, length), dtype=np.uint8), CRC_TABLE


def _jax_crc32(messages, table):
    import jax.numpy as jnp
    from jax import lax

    def byte(j, crc):
        return table[(crc ^ messages[:, j]) & 0xFF] ^ (crc >> 8)

    crc = lax.fori_loop(0, messages.shape[1], byte, jnp.full(messages.shape[0], 0xFFFFFFFF, dtype=jnp.uint32))
    return (crc ^ jnp.uint32(0xFFFFFFFF),)


def crc32_loops(messages, table):
    """The same CRC as Numba users write it: a loop over messages and their bytes."""
    result = np.empty(messages.shape[0], dtype=np.uint32)
    for m in range(messages.shape[0]):
        crc = np.uint32(0xFFFFFFFF)
        for j in range(messages.shape[1]):
            crc = table[(crc ^ messages[m, j]) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
        result[m] = crc ^ np.uint32(0xFFFFFFFF)
    return result


@program("integer", "CRC-32 (table-driven) of many equal-length messages, one byte column per step",
         _messages_inputs, numba=crc32_loops, jax=_jax_crc32)
def crc32(messages, table):
    crc = np.full(messages.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for j in range(messages.shape[1]):
        crc = table[(crc ^ messages[:, j]) & 0xFF] ^ (crc >> 8)
    return crc ^ np.uint32(0xFFFFFFFF)


def _counter_inputs(size):
    return (np.arange(64 if size == "small" else 4_000_000, dtype=np.uint64) + np.uint64(12345),)


def _jax_splitmix64(counter):
    import jax.numpy as jnp

    z = counter + jnp.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> 30)) * jnp.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> 27)) * jnp.uint64(0x94D049BB133111EB)
    return (z ^ (z >> 31),)


@program("integer", "splitmix64 hash of a counter array (wrapping uint64 arithmetic)", _counter_inputs,
         numba=True, jax=_jax_splitmix64)
def splitmix64(counter):
    z = counter + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _board_inputs(size):
    side, steps = (16, 4) if size == "small" else (1000, 20)
    return (rng().random((side, side)) < 0.3).astype(np.int8), steps


@program("integer", "Conway's game of life on an int8 board, dead border", _board_inputs, jax=True,
         jax_static=(1,))
def game_of_life(board, steps):
    for t in range(steps):
        padded = np.pad(board, 1)
        h, w = board.shape
        neighbours = np.zeros_like(board)
        for i in range(3):
            for j in range(3):
                if (i, j) != (1, 1):
                    neighbours += padded[i:i + h, j:j + w]
        board = ((neighbours == 3) | ((board == 1) & (neighbours == 2))).astype(np.int8)
    return board
