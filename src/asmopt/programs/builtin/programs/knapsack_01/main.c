/* 0/1 knapsack over generated items with a one-dimensional table, plus the least capacity
 * that reaches the best value.
 * Input: n capacity seed (items from a xorshift64* stream of the 64-bit seed).
 * Output: best value for capacity and for capacity/2, a table checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>

static uint64_t s64;

static uint32_t xs64(void)
{
    s64 ^= s64 >> 12;
    s64 ^= s64 << 25;
    s64 ^= s64 >> 27;
    return (uint32_t)((s64 * 0x2545F4914F6CDD1DULL) >> 32);
}

int main(void)
{
    int n, cap;
    uint64_t seed;
    if (scanf("%d %d %" SCNu64, &n, &cap, &seed) != 3 || n < 0 || cap < 0) {
        printf("bad input\n");
        return 0;
    }
    s64 = seed ^ 0x9E3779B97F4A7C15ULL;
    if (!s64) s64 = 0x12345678u;
    int *w = malloc((size_t)(n ? n : 1) * sizeof *w);
    long long *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    long long *dp = calloc((size_t)cap + 1, sizeof *dp);
    if (!w || !v || !dp) return 1;
    int wmax = cap / 8 + 1;
    for (int i = 0; i < n; i++) {
        w[i] = 1 + (int)(xs64() % (uint32_t)wmax);
        v[i] = (long long)(w[i]) * 3 + (long long)(xs64() % 1000);
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
