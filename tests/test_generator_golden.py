"""Every built-in program's input generator draws the same bytes as it always has.

A recorded seed must draw the same input again (`asmopt check --input-seed`, a verdict's drawn
input, a stored score), so nothing that checks or bounds a spec may change what an
accepted spec draws. Each digest covers, for one program, two draws of every light class,
one of the heavy class and one draw of every light class with its first field drawn again
(`draw_changed`, the entropy measurement's path), under a fixed secret.

A digest changes only when a program's spec changes on purpose (docs/builtin_suite.md):
then print the new digests with
`python -c "from test_generator_golden import digests; print(digests())"` from `tests/`
and replace that program's entry, after checking that no other entry moved.
"""

from __future__ import annotations

import hashlib

import pytest

from asmopt.programs import load_builtin_suite
from asmopt.programs.generators import derive_seed
from asmopt.programs.model import Program

SECRET = 20240917
EXPECTED = {
    "base64_roundtrip": "6daf81e71acaee96",
    "bfs_grid": "e40cab46a508d20c",
    "bigint_factorial": "6e760ea379bb4de4",
    "bloom_filter": "c244d2a39f8529ab",
    "coin_change_ways": "0d4fc88ce85149b6",
    "collatz_longest": "66498675eaec8a3a",
    "conv2d_int": "8427d6431e182971",
    "crc32_table": "4350bd1991bfb679",
    "dijkstra_heap": "2eca078a67ad255a",
    "edit_distance": "374afcf7064c47f0",
    "fenwick_inversions": "56a90e76e8658fc8",
    "fft_convolve": "9c05ed8ea59a2a00",
    "floyd_warshall": "2c67ee9fd73b65a0",
    "gcd_pairs": "22b48907ccd6cb81",
    "hash_table_open": "71412f540c96bf1c",
    "heapsort_int": "1db17bd31d99d5dc",
    "jacobi_heat": "d7bab4d0bf81f606",
    "kmp_search": "150d4cb789082dc7",
    "knapsack_01": "afcf683b50491595",
    "kruskal_mst": "2162f1260dd29a9a",
    "lcs_dp": "fc23aa4728ad6e13",
    "life_bitboard": "43a3ceb17471e113",
    "lis_nlogn": "3dfcac3c7941528e",
    "lru_cache": "6b3da00b677380d9",
    "manacher_palindrome": "9efe399945f30b4f",
    "mandelbrot": "164a30a2f50e7877",
    "matmul_double": "01ac8e2a1ca21521",
    "matmul_int": "8cf0d17a7f871238",
    "max_flow_dinic": "5a6814b214c50030",
    "mergesort_u64": "c9fd56a538fc92e6",
    "miller_rabin32": "af86f04a0a2d24af",
    "nbody_sim": "353be1f2f76f1b7d",
    "nqueens_bitmask": "1f570f1a45d670bb",
    "popcount_swar": "1bdf35e49d03e371",
    "prefix_sum_2d": "02b8b874d67c36b7",
    "qsort_records": "3f298dea55618048",
    "quicksort_int": "8c74f4072282f6b0",
    "radix_sort_u32": "827edb841d6bcf8c",
    "scc_kosaraju": "8069cb950478314d",
    "segment_tree": "6f1dbca64f80291c",
    "sha256_blocks": "059d617710e90416",
    "sieve_primes": "4d83e8ffc372c382",
    "subset_sum_mitm": "1e9eec8630789eb4",
    "suffix_array": "49b46223836e8838",
    "word_freq": "f600617b24173830",
}


def _digest(program: Program) -> str:
    gen = program.inputs
    assert gen is not None, program.id
    h = hashlib.sha256()

    def add(data: bytes) -> None:
        h.update(len(data).to_bytes(8, "little") + data)

    for klass in gen.class_names:
        for k in range(1 if klass == "heavy" else 2):
            add(gen.draw(klass, derive_seed(SECRET, program.id, klass, k)))
        if klass != "heavy" and gen.fields(klass):
            field = gen.fields(klass)[0]
            other = derive_seed(SECRET, program.id, klass, "changed")
            seed = derive_seed(SECRET, program.id, klass, 0)
            add(gen.draw_changed(klass, seed, field, other, field in gen.wide_fields(klass)))
    return h.hexdigest()[:16]


def digests() -> dict[str, str]:
    """Program id -> the digest of its draws (module docstring)."""
    return {program.id: _digest(program) for program in load_builtin_suite()}


@pytest.mark.fast
def test_every_builtin_generator_loads_and_draws_the_same_bytes() -> None:
    assert digests() == EXPECTED
