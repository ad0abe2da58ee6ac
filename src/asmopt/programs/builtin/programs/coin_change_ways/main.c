/* Coin change: number of ways (mod 1e9+7) to pay every amount up to N, and the minimum
 * number of coins, for a coin set read from stdin.
 * Input: N k, then k coin values. Output: ways and min coins at a few amounts, checksums. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

#define MOD 1000000007u

int main(void)
{
    int N, k;
    if (scanf("%d %d", &N, &k) != 2 || N < 0 || k < 0) {
        printf("bad input\n");
        return 0;
    }
    int *coin = malloc((size_t)(k ? k : 1) * sizeof *coin);
    uint32_t *ways = calloc((size_t)N + 1, sizeof *ways);
    int *minc = malloc(((size_t)N + 1) * sizeof *minc);
    if (!coin || !ways || !minc) return 1;
    for (int i = 0; i < k; i++) {
        if (scanf("%d", &coin[i]) != 1 || coin[i] <= 0) {
            printf("bad coin\n");
            return 0;
        }
    }
    const int INF = 1 << 30;
    ways[0] = 1;
    minc[0] = 0;
    for (int x = 1; x <= N; x++) minc[x] = INF;
    for (int i = 0; i < k; i++) {
        int c = coin[i];
        for (int x = c; x <= N; x++) {
            uint32_t t = ways[x] + ways[x - c];
            if (t >= MOD) t -= MOD;
            ways[x] = t;
            int m = minc[x - c] + 1;
            if (m < minc[x]) minc[x] = m;
        }
    }
    uint64_t hw = 0, hm = 0;
    int unreachable = 0;
    for (int x = 0; x <= N; x++) {
        hw = (hw * 1000003u + ways[x]) % 0xFFFFFFFFFFFFFFC5ULL;
        if (minc[x] >= INF) unreachable++;
        else hm = hm * 31 + (uint64_t)minc[x];
    }
    printf("N %d coins %d\n", N, k);
    for (int p = 1; p <= 4; p++) {
        int x = (int)((long long)N * p / 4);
        printf("amount %d ways %u min %d\n", x, ways[x], minc[x] >= INF ? -1 : minc[x]);
    }
    printf("unreachable %d\n", unreachable);
    printf("ways_hash %llu min_hash %llu\n", (unsigned long long)hw, (unsigned long long)hm);
    free(coin);
    free(ways);
    free(minc);
    return 0;
}
