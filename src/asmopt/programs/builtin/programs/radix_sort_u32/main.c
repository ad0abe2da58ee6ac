/* LSD radix sort of 32-bit keys, four 8-bit passes with counting, then statistics.
 * Input: n seed shift (seed: 64 bits; keys are the mixed high halves of a 64-bit LCG started
 * at the seed, >> shift, so a larger shift means more duplicates).
 * Output: largest gap between neighbours, number of distinct keys, checksums. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>
#include <string.h>

static uint64_t lcg_state;

static uint32_t next_u32(void)
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t x = (uint32_t)(lcg_state >> 32);
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    return x;
}

static void radix_sort(uint32_t *a, uint32_t *buf, size_t n)
{
    size_t count[256];
    for (int pass = 0; pass < 4; pass++) {
        int shift = pass * 8;
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++) count[(a[i] >> shift) & 255u]++;
        size_t total = 0;
        for (int b = 0; b < 256; b++) {
            size_t c = count[b];
            count[b] = total;
            total += c;
        }
        for (size_t i = 0; i < n; i++) buf[count[(a[i] >> shift) & 255u]++] = a[i];
        uint32_t *t = a;
        a = buf;
        buf = t;
    }
    /* four passes: the data ends up back in the original array */
}

int main(void)
{
    size_t n;
    uint64_t seed;
    int shift;
    if (scanf("%zu %" SCNu64 " %d", &n, &seed, &shift) != 3 || shift < 0 || shift > 31) {
        printf("bad input\n");
        return 0;
    }
    lcg_state = seed;
    uint32_t *a = malloc((n ? n : 1) * sizeof *a);
    uint32_t *buf = malloc((n ? n : 1) * sizeof *buf);
    if (!a || !buf) return 1;
    for (size_t i = 0; i < n; i++) a[i] = next_u32() >> shift;
    radix_sort(a, buf, n);
    uint32_t max_gap = 0;
    size_t distinct = n ? 1 : 0;
    uint32_t weighted = 0;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            if (a[i] < a[i - 1]) {
                printf("not sorted\n");
                return 0;
            }
            uint32_t gap = a[i] - a[i - 1];
            if (gap > max_gap) max_gap = gap;
            if (gap) distinct++;
        }
        weighted = weighted * 2654435761u + a[i];
        sum += a[i];
    }
    printf("n %zu distinct %zu max_gap %u\n", n, distinct, max_gap);
    printf("sum %llu weighted %u\n", (unsigned long long)sum, weighted);
    if (n) printf("p10 %u p50 %u p90 %u\n", a[n / 10], a[n / 2], a[n - 1 - n / 10]);
    free(a);
    free(buf);
    return 0;
}
