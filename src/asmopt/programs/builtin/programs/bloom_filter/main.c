/* Bloom filter with k hash functions by double hashing over a 64-bit mix, measuring the
 * false-positive rate against the theoretical estimate.
 * Input: log2_bits k inserts queries seed. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <math.h>

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int main(void)
{
    int lg, k;
    uint64_t inserts, queries;
    unsigned long long seed;
    if (scanf("%d %d %llu %llu %llu", &lg, &k, (unsigned long long *)&inserts,
              (unsigned long long *)&queries, &seed) != 5 || lg < 6 || lg > 34 || k < 1 || k > 32) {
        printf("bad input\n");
        return 0;
    }
    uint64_t bits = 1ULL << lg, mask = bits - 1;
    uint64_t *words = calloc(bits / 64, sizeof *words);
    if (!words) return 1;
    /* inserted keys are the odd-indexed outputs of the stream, queries use even ones */
    uint64_t key_base = mix64(seed);
    for (uint64_t i = 0; i < inserts; i++) {
        uint64_t key = mix64(key_base + 2 * i + 1);
        uint64_t h1 = mix64(key), h2 = mix64(key ^ 0x5851F42D4C957F2DULL) | 1;
        for (int j = 0; j < k; j++) {
            uint64_t b = (h1 + (uint64_t)j * h2) & mask;
            words[b >> 6] |= 1ULL << (b & 63);
        }
    }
    uint64_t positives = 0, present = 0;
    for (uint64_t i = 0; i < queries; i++) {
        /* every 8th query asks for a key that was inserted */
        uint64_t idx = (i % 8 == 0 && inserts) ? 2 * ((i / 8) % inserts) + 1 : 2 * i + 2;
        uint64_t key = mix64(key_base + idx);
        uint64_t h1 = mix64(key), h2 = mix64(key ^ 0x5851F42D4C957F2DULL) | 1;
        int all = 1;
        for (int j = 0; j < k && all; j++) {
            uint64_t b = (h1 + (uint64_t)j * h2) & mask;
            all = (words[b >> 6] >> (b & 63)) & 1;
        }
        if (i % 8 == 0 && inserts) present += all;
        else positives += all;
    }
    /* FNV-1a over the filter's words: which bits the inserts set, not only how many */
    uint64_t filter_hash = 0xCBF29CE484222325ULL;
    for (uint64_t w = 0; w < bits / 64; w++) filter_hash = (filter_hash ^ words[w]) * 0x100000001B3ULL;
    uint64_t set = 0;
    for (uint64_t w = 0; w < bits / 64; w++) {
        uint64_t v = words[w];
        while (v) {
            v &= v - 1;
            set++;
        }
    }
    uint64_t absent_queries = queries - (inserts ? (queries + 7) / 8 : 0);
    double fill = (double)set / (double)bits;
    double expected = pow(1.0 - exp(-(double)k * (double)inserts / (double)bits), (double)k);
    double measured = absent_queries ? (double)positives / (double)absent_queries : 0.0;
    printf("bits %llu set %llu fill %.4f\n", (unsigned long long)bits, (unsigned long long)set, fill);
    printf("present_found %llu of %llu\n", (unsigned long long)present,
           (unsigned long long)(inserts ? (queries + 7) / 8 : 0));
    printf("false_positives %llu of %llu rate %.5f expected %.5f\n", (unsigned long long)positives,
           (unsigned long long)absent_queries, measured, expected);
    printf("filter_hash %016llx\n", (unsigned long long)filter_hash);
    free(words);
    return 0;
}
