/* Longest Collatz chain below N with a memo table for values below N, plus the highest
 * value reached and a histogram of chain lengths.
 * Input: N. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

int main(void)
{
    uint32_t N;
    if (scanf("%u", &N) != 1) {
        printf("bad input\n");
        return 0;
    }
    uint16_t *len = calloc((size_t)N + 1, sizeof *len);
    if (!len) return 1;
    if (N >= 1) len[1] = 1;
    uint32_t best = N >= 1 ? 1 : 0, best_len = N >= 1 ? 1 : 0;
    uint64_t peak = 1, total = 0;
    uint32_t peak_from = 1;
    uint32_t hist[16] = {0};
    for (uint32_t start = 2; start < N; start++) {
        uint64_t x = start;
        uint32_t steps = 0;
        while (x >= start) {
            /* values below start are already in the table */
            if (x & 1) {
                x = 3 * x + 1;
                if (x > peak) {
                    peak = x;
                    peak_from = start;
                }
            } else {
                x >>= 1;
            }
            steps++;
        }
        uint32_t L = steps + len[x];
        len[start] = (uint16_t)L;
        total += L;
        hist[L / 50 < 15 ? L / 50 : 15]++;
        if (L > best_len) {
            best_len = L;
            best = start;
        }
    }
    printf("N %u longest_start %u length %u\n", N, best, best_len);
    printf("peak %llu from %u\n", (unsigned long long)peak, peak_from);
    printf("total_length %llu\n", (unsigned long long)total);
    printf("hist");
    for (int i = 0; i < 16; i++) printf(" %u", hist[i]);
    printf("\n");
    free(len);
    return 0;
}
