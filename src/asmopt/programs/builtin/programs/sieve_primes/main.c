/* Segmented sieve of Eratosthenes over the window [L, L + N), where L (below 2^40) comes
 * from a 64-bit seed: base primes up to sqrt(L + N) by an odd-only byte sieve, then the
 * window's odd numbers crossed off segment by segment (one byte per odd number). Prime
 * statistics of the window: count, sum, twin pairs, largest gap, smallest and largest
 * prime, and primes in each tenth of the window.
 * Input: N seed (L = splitmix64(seed) >> L_SHIFT, so every bit of the seed moves the window). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <inttypes.h>

#define SEGMENT 262144u /* odd numbers per segment */
#ifndef L_SHIFT
#define L_SHIFT 24 /* L below 2^(64 - L_SHIFT) */
#endif

static uint64_t splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t isqrt(uint64_t v)
{
    uint64_t r = 0;
    for (uint64_t bit = 1ULL << 62; bit; bit >>= 2) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
    }
    return r;
}

int main(void)
{
    uint64_t N, seed;
    if (scanf("%" SCNu64 " %" SCNu64, &N, &seed) != 2 || N > (1ULL << 32)) {
        printf("bad input\n");
        return 0;
    }
    uint64_t L = splitmix64(seed) >> L_SHIFT, R = L + N; /* the window is [L, R) */

    /* base primes: odd primes up to sqrt(R - 1), by a plain odd-only sieve */
    uint64_t root = R ? isqrt(R - 1) : 0;
    uint64_t bhalf = root / 2 + 1; /* index i stands for 2i + 1 */
    unsigned char *bcomp = calloc(bhalf, 1);
    uint32_t *base = malloc(bhalf * sizeof *base);
    if (!bcomp || !base) return 1;
    size_t nbase = 0;
    for (uint64_t i = 1; i < bhalf; i++) {
        if (bcomp[i]) continue;
        uint64_t p = 2 * i + 1;
        base[nbase++] = (uint32_t)p;
        for (uint64_t j = p * p / 2; j < bhalf; j += p) bcomp[j] = 1;
    }

    /* the window's odd numbers, o = first odd >= L, index k stands for o + 2k */
    uint64_t o = L | 1;
    uint64_t nodd = R > o ? (R - o + 1) / 2 : 0;
    unsigned char *comp = malloc(SEGMENT);
    if (!comp) return 1;
    uint64_t count = 0, sum = 0, twins = 0, gap = 0, gap_at = 0, prev = 0, first = 0;
    uint64_t tenth[10] = {0};
    uint64_t step = N / 10 + 1;
    if (L <= 2 && 2 < R) {
        count = 1;
        sum = 2;
        prev = first = 2;
        tenth[(2 - L) / step]++;
    }
    for (uint64_t seg = 0; seg < nodd; seg += SEGMENT) {
        uint64_t len = nodd - seg < SEGMENT ? nodd - seg : SEGMENT;
        uint64_t lo = o + 2 * seg; /* odd number at index 0 of this segment */
        uint64_t hi = lo + 2 * (len - 1);
        memset(comp, 0, len);
        for (size_t b = 0; b < nbase; b++) {
            uint64_t p = base[b];
            if (p * p > hi) break;
            /* first odd multiple of p that is >= max(p*p, lo) */
            uint64_t m = p * p;
            if (m < lo) {
                m = (lo + p - 1) / p * p;
                if (!(m & 1)) m += p;
            }
            for (uint64_t j = (m - lo) / 2; j < len; j += p) comp[j] = 1;
        }
        for (uint64_t j = 0; j < len; j++) {
            uint64_t v = lo + 2 * j;
            if (comp[j] || v == 1) continue;
            count++;
            sum += v;
            tenth[(v - L) / step]++;
            if (prev) {
                if (v - prev == 2) twins++;
                if (v - prev > gap) {
                    gap = v - prev;
                    gap_at = prev;
                }
            } else {
                first = v;
            }
            prev = v;
        }
    }
    printf("N %" PRIu64 " primes %" PRIu64 " sum %" PRIu64 "\n", N, count, sum);
    printf("twins %" PRIu64 " largest_gap %" PRIu64 " after %" PRIu64 "\n", twins, gap, gap_at);
    printf("smallest %" PRIu64 " largest %" PRIu64 "\n", first, prev);
    printf("tenths");
    for (int i = 0; i < 10; i++) printf(" %" PRIu64, tenth[i]);
    printf("\n");
    free(bcomp);
    free(base);
    free(comp);
    return 0;
}
