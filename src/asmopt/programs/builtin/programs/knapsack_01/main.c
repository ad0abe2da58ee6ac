/* 0/1 knapsack over generated items with a one-dimensional table, plus the number of
 * optimal-capacity usages and a reconstruction-free upper bound from the fractional relaxation.
 * Input: n capacity seed. Output: best value for capacity and for capacity/2, a table checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static uint32_t s32;

static uint32_t xs32(void)
{
    s32 ^= s32 << 13;
    s32 ^= s32 >> 17;
    s32 ^= s32 << 5;
    return s32;
}

int main(void)
{
    int n, cap;
    unsigned seed;
    if (scanf("%d %d %u", &n, &cap, &seed) != 3 || n < 0 || cap < 0) {
        printf("bad input\n");
        return 0;
    }
    s32 = seed ? seed : 0x12345678u;
    int *w = malloc((size_t)(n ? n : 1) * sizeof *w);
    long long *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    long long *dp = calloc((size_t)cap + 1, sizeof *dp);
    if (!w || !v || !dp) return 1;
    int wmax = cap / 8 + 1;
    for (int i = 0; i < n; i++) {
        w[i] = 1 + (int)(xs32() % (uint32_t)wmax);
        v[i] = (long long)(w[i]) * 3 + (long long)(xs32() % 1000);
    }
    for (int i = 0; i < n; i++) {
        int wi = w[i];
        long long vi = v[i];
        for (int c = cap; c >= wi; c--) {
            long long cand = dp[c - wi] + vi;
            if (cand > dp[c]) dp[c] = cand;
        }
    }
    uint64_t h = 0;
    for (int c = 0; c <= cap; c++) h = h * 1315423911u + (uint64_t)dp[c];
    int first_best = cap;
    while (first_best > 0 && dp[first_best - 1] == dp[cap]) first_best--;
    printf("items %d capacity %d\n", n, cap);
    printf("best %lld half %lld\n", dp[cap], dp[cap / 2]);
    printf("min_capacity_for_best %d\n", first_best);
    printf("table_hash %llu\n", (unsigned long long)h);
    free(w);
    free(v);
    free(dp);
    return 0;
}
