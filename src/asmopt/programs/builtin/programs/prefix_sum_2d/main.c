/* Two-dimensional prefix sums over a generated grid of signed values: random rectangle sum
 * queries, the best k x k square, and the maximum-sum column strip (Kadane on row sums).
 * Input: H W queries k seed. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static uint64_t st;

static uint32_t rnd(void)
{
    st = st * 2862933555777941757ULL + 3037000493ULL;
    return (uint32_t)(st >> 32);
}

int main(void)
{
    int H, W, k;
    long queries;
    unsigned long long seed;
    if (scanf("%d %d %ld %d %llu", &H, &W, &queries, &k, &seed) != 5 || H < 1 || W < 1 ||
        queries < 0 || k < 1) {
        printf("bad input\n");
        return 0;
    }
    st = seed;
    size_t stride = (size_t)W + 1;
    int *g = malloc((size_t)H * (size_t)W * sizeof *g);
    long long *P = calloc(((size_t)H + 1) * stride, sizeof *P);
    if (!g || !P) return 1;
    for (size_t i = 0; i < (size_t)H * (size_t)W; i++) g[i] = (int)(rnd() % 2001) - 1000 + (int)(rnd() % 7);
    for (int r = 1; r <= H; r++) {
        long long rowsum = 0;
        for (int c = 1; c <= W; c++) {
            rowsum += g[(size_t)(r - 1) * W + (c - 1)];
            P[(size_t)r * stride + c] = P[(size_t)(r - 1) * stride + c] + rowsum;
        }
    }
    long long qsum = 0, qmax = 0;
    uint64_t qh = 0;
    for (long q = 0; q < queries; q++) {
        int r1 = (int)(rnd() % (unsigned)H), r2 = (int)(rnd() % (unsigned)H);
        int c1 = (int)(rnd() % (unsigned)W), c2 = (int)(rnd() % (unsigned)W);
        if (r1 > r2) { int t = r1; r1 = r2; r2 = t; }
        if (c1 > c2) { int t = c1; c1 = c2; c2 = t; }
        long long v = P[(size_t)(r2 + 1) * stride + (c2 + 1)] - P[(size_t)r1 * stride + (c2 + 1)] -
                      P[(size_t)(r2 + 1) * stride + c1] + P[(size_t)r1 * stride + c1];
        qsum += v;
        if (q == 0 || v > qmax) qmax = v;
        qh = qh * 31 + (uint64_t)v;
    }
    long long best = 0;
    int br = -1, bc = -1;
    if (k <= H && k <= W) {
        for (int r = 0; r + k <= H; r++) {
            for (int c = 0; c + k <= W; c++) {
                long long v = P[(size_t)(r + k) * stride + (c + k)] - P[(size_t)r * stride + (c + k)] -
                              P[(size_t)(r + k) * stride + c] + P[(size_t)r * stride + c];
                if (br < 0 || v > best) {
                    best = v;
                    br = r;
                    bc = c;
                }
            }
        }
    }
    /* best full-height column strip: Kadane over column totals */
    long long cur = 0, strip = 0;
    int first = 1;
    for (int c = 0; c < W; c++) {
        long long col = P[(size_t)H * stride + c + 1] - P[(size_t)H * stride + c];
        cur = cur > 0 ? cur + col : col;
        if (first || cur > strip) {
            strip = cur;
            first = 0;
        }
    }
    printf("total %lld\n", P[(size_t)H * stride + W]);
    printf("queries %ld sum %lld max %lld hash %llu\n", queries, qsum, qmax, (unsigned long long)qh);
    printf("best_square %d at %d %d sum %lld\n", k, br, bc, best);
    printf("best_strip %lld\n", strip);
    free(g);
    free(P);
    return 0;
}
