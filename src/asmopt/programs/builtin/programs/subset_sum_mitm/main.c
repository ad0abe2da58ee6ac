/* Meet in the middle for subset sums: each half's subset sums are generated already sorted
 * by merging (sum without / with the next element), then two pointers count, for every
 * target read from stdin, the subsets that hit it exactly and the best sum not above it.
 * Input: n, n non-negative values, q, q targets. n <= 44. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static uint64_t *half_sums(const uint64_t *v, int k, uint64_t **scratch)
{
    size_t cap = (size_t)1 << k;
    uint64_t *a = malloc(cap * sizeof *a);
    uint64_t *b = malloc(cap * sizeof *b);
    if (!a || !b) exit(1);
    size_t len = 1;
    a[0] = 0;
    for (int i = 0; i < k; i++) {
        /* merge a[0..len) with a[0..len)+v[i] into b */
        size_t p = 0, q = 0, o = 0;
        uint64_t add = v[i];
        while (p < len && q < len) {
            uint64_t x = a[p], y = a[q] + add;
            if (x <= y) { b[o++] = x; p++; }
            else { b[o++] = y; q++; }
        }
        while (p < len) b[o++] = a[p++];
        while (q < len) b[o++] = a[q++] + add;
        len = o;
        uint64_t *t = a;
        a = b;
        b = t;
    }
    *scratch = b;
    return a;
}

int main(void)
{
    int n;
    if (scanf("%d", &n) != 1 || n < 0 || n > 44) {
        printf("bad input\n");
        return 0;
    }
    uint64_t v[44];
    for (int i = 0; i < n; i++) {
        unsigned long long t;
        if (scanf("%llu", &t) != 1) {
            printf("bad value\n");
            return 0;
        }
        v[i] = t;
    }
    int k1 = n / 2, k2 = n - k1;
    uint64_t *s1, *s2, *x1, *x2;
    s1 = half_sums(v, k1, &x1);
    s2 = half_sums(v + k1, k2, &x2);
    size_t n1 = (size_t)1 << k1, n2 = (size_t)1 << k2;
    int q;
    if (scanf("%d", &q) != 1 || q < 0) {
        printf("bad input\n");
        return 0;
    }
    for (int t = 0; t < q; t++) {
        unsigned long long target;
        if (scanf("%llu", &target) != 1) break;
        /* s1 ascending, s2 descending via index j */
        uint64_t ways = 0, best = 0;
        int found = 0;
        size_t i = 0, j = n2;
        while (i < n1 && j > 0) {
            uint64_t sum = s1[i] + s2[j - 1];
            if (sum > target) {
                j--;
            } else {
                if (!found || sum > best) {
                    best = sum;
                    found = 1;
                }
                if (sum < target) {
                    i++;
                } else {
                    /* count equal runs on both sides */
                    uint64_t a = s1[i], b = s2[j - 1];
                    uint64_t ca = 0, cb = 0;
                    while (i < n1 && s1[i] == a) { i++; ca++; }
                    while (j > 0 && s2[j - 1] == b) { j--; cb++; }
                    ways += ca * cb;
                }
            }
        }
        printf("target %llu ways %llu best %llu\n", target, (unsigned long long)ways,
               found ? (unsigned long long)best : 0ULL);
    }
    printf("halves %zu %zu\n", n1, n2);
    free(s1); free(s2); free(x1); free(x2);
    return 0;
}
