/* All-pairs shortest paths with Floyd-Warshall on a weighted directed graph read from stdin.
 * Input: n m, then m lines "u v w" (1-based vertices, positive weights).
 * Output: reachable pair count, sum of distances, diameter, per-row checksum hash. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

#define INF 0x3f3f3f3f

int main(void)
{
    int n, m;
    if (scanf("%d %d", &n, &m) != 2 || n < 0 || m < 0) {
        printf("bad input\n");
        return 0;
    }
    size_t nn = (size_t)n * (size_t)n;
    int *d = malloc((nn ? nn : 1) * sizeof *d);
    if (!d) return 1;
    for (size_t i = 0; i < nn; i++) d[i] = INF;
    for (int i = 0; i < n; i++) d[(size_t)i * n + i] = 0;
    for (int e = 0; e < m; e++) {
        int u, v, w;
        if (scanf("%d %d %d", &u, &v, &w) != 3 || u < 1 || u > n || v < 1 || v > n || w < 0) {
            printf("bad edge %d\n", e);
            return 0;
        }
        size_t p = (size_t)(u - 1) * n + (v - 1);
        if (w < d[p]) d[p] = w;
    }
    for (int k = 0; k < n; k++) {
        const int *dk = d + (size_t)k * n;
        for (int i = 0; i < n; i++) {
            int *di = d + (size_t)i * n;
            int dik = di[k];
            if (dik >= INF) continue;
            for (int j = 0; j < n; j++) {
                int cand = dik + dk[j];
                if (cand < di[j]) di[j] = cand;
            }
        }
    }
    long long reach = 0, sum = 0;
    int diam = 0;
    uint64_t h = 0;
    for (int i = 0; i < n; i++) {
        uint32_t rowh = 0;
        for (int j = 0; j < n; j++) {
            int x = d[(size_t)i * n + j];
            if (x >= INF) continue;
            reach++;
            sum += x;
            if (x > diam) diam = x;
            rowh = rowh * 16777619u ^ (uint32_t)x;
        }
        h = h * 1000003u + rowh;
    }
    printf("n %d m %d\n", n, m);
    printf("reachable_pairs %lld distance_sum %lld diameter %d\n", reach, sum, diam);
    printf("hash %llu\n", (unsigned long long)h);
    free(d);
    return 0;
}
