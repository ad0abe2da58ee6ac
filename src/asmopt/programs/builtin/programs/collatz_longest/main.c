/* Longest Collatz chain among N starting values drawn from a seed (each in [2, 2^40)),
 * with a memo table of chain lengths for values below 2^16 that the walks fill as they
 * pass through it, plus the highest value reached and a histogram of chain lengths.
 * A walk that would overflow 64 bits goes on in two 64-bit words (the chain, its length
 * and its peak stay exact up to 2^128; past that the program reports an error).
 * Input: N seed (starts from a splitmix64 stream of the 64-bit seed). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>

#define MEMO_BITS 16
#define MEMO_SIZE (1u << MEMO_BITS)
#define START_BITS 40

static uint64_t sm_state;

static uint64_t splitmix64(void)
{
    uint64_t z = (sm_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint16_t *len;       /* chain length of each value below MEMO_SIZE (0: unknown) */
static uint32_t *path;      /* values below MEMO_SIZE seen by the current walk ... */
static uint32_t *path_step; /* ... and the step at which each was seen */
static size_t path_cap;

static int push(uint32_t v, uint32_t step, size_t *k)
{
    if (*k == path_cap) {
        size_t cap = path_cap * 2;
        uint32_t *p = realloc(path, cap * sizeof *p);
        if (!p) return 0;
        path = p;
        p = realloc(path_step, cap * sizeof *p);
        if (!p) return 0;
        path_step = p;
        path_cap = cap;
    }
    path[*k] = v;
    path_step[*k] = step;
    (*k)++;
    return 1;
}

/* Walks x (high word hi) until a value with a known length; returns the chain length of
 * the start, updates the peak (peak_hi:peak_lo). Returns 0 on failure (out of memory, or
 * a value past 2^128). */
static uint32_t walk(uint64_t x, uint64_t *peak_hi, uint64_t *peak_lo, int *peaked)
{
    uint64_t hi = 0;
    uint32_t steps = 0;
    size_t k = 0;
    for (;;) {
        if (hi == 0 && x < MEMO_SIZE) {
            if (len[x]) break;
            if (!push((uint32_t)x, steps, &k)) return 0;
        }
        if (x & 1) {
            /* 3x + 1 = 2x + x + 1 in two words: carry is its high word (0, 1 or 2) */
            uint64_t twice = x << 1, sum = twice + x, lo3 = sum + 1;
            uint64_t carry = (x >> 63) + (sum < twice) + (lo3 < sum);
            if (hi > (UINT64_MAX - carry) / 3) return 0;
            hi = hi * 3 + carry;
            x = lo3;
            if (hi > *peak_hi || (hi == *peak_hi && x > *peak_lo)) {
                *peak_hi = hi;
                *peak_lo = x;
                *peaked = 1;
            }
        } else {
            x = (x >> 1) | (hi << 63);
            hi >>= 1;
        }
        steps++;
    }
    uint32_t total = steps + len[x];
    for (size_t i = 0; i < k; i++) len[path[i]] = (uint16_t)(total - path_step[i]);
    return total;
}

int main(void)
{
    uint32_t N;
    uint64_t seed;
    if (scanf("%" SCNu32 " %" SCNu64, &N, &seed) != 2) {
        printf("bad input\n");
        return 0;
    }
    sm_state = seed;
    len = calloc(MEMO_SIZE, sizeof *len);
    path_cap = 1024;
    path = malloc(path_cap * sizeof *path);
    path_step = malloc(path_cap * sizeof *path_step);
    if (!len || !path || !path_step) return 1;
    len[1] = 1;
    uint64_t best = 0, peak_hi = 0, peak_lo = 0, peak_from = 0, total = 0;
    uint32_t best_len = 0;
    uint32_t hist[16] = {0};
    for (uint32_t i = 0; i < N; i++) {
        uint64_t start = 2 + splitmix64() % ((1ULL << START_BITS) - 2);
        int peaked = 0;
        uint32_t L = walk(start, &peak_hi, &peak_lo, &peaked);
        if (L == 0) {
            printf("walk failed from %" PRIu64 " (past 2^128 or out of memory)\n", start);
            return 1;
        }
        if (peaked) peak_from = start;
        total += L;
        hist[L / 50 < 15 ? L / 50 : 15]++;
        if (L > best_len || (L == best_len && start < best)) {
            best_len = L;
            best = start;
        }
    }
    printf("N %" PRIu32 " longest_start %" PRIu64 " length %" PRIu32 "\n", N, best, best_len);
    if (peak_hi)
        printf("peak 0x%" PRIx64 "%016" PRIx64 " from %" PRIu64 "\n", peak_hi, peak_lo,
               peak_from);
    else
        printf("peak %" PRIu64 " from %" PRIu64 "\n", peak_lo, peak_from);
    printf("total_length %" PRIu64 "\n", total);
    printf("hist");
    for (int i = 0; i < 16; i++) printf(" %" PRIu32, hist[i]);
    printf("\n");
    free(len);
    free(path);
    free(path_step);
    return 0;
}
