/* Longest strictly increasing and longest non-decreasing subsequences by patience sorting
 * with binary search, and reconstruction of one strictly increasing subsequence.
 * Input: n seed. The sequence is a noisy mix of trends. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static uint64_t s;

static uint64_t rnd(void)
{
    s += 0x9E3779B97F4A7C15ULL;
    uint64_t z = s;
    z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdULL;
    z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53ULL;
    return z ^ (z >> 33);
}

/* first index in tails[0..len) whose value is >= x (strict) or > x (non-strict) */
static size_t lower_bound(const int *tails, size_t len, int x)
{
    size_t lo = 0, hi = len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tails[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static size_t upper_bound(const int *tails, size_t len, int x)
{
    size_t lo = 0, hi = len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tails[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int main(void)
{
    size_t n;
    unsigned long long seed;
    if (scanf("%zu %llu", &n, &seed) != 2) {
        printf("bad input\n");
        return 0;
    }
    s = seed;
    size_t cap = n ? n : 1;
    int *a = malloc(cap * sizeof *a);
    int *tails = malloc(cap * sizeof *tails);
    size_t *tail_idx = malloc(cap * sizeof *tail_idx);
    size_t *parent = malloc(cap * sizeof *parent);
    if (!a || !tails || !tail_idx || !parent) return 1;
    long trend = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        if ((r & 1023) == 0) trend = (long)(r >> 40) % 2000 - 1000;
        long v = (long)((r >> 10) % 100000) + trend * (long)(i % 1000);
        a[i] = (int)(v % 1000000);
    }
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t p = lower_bound(tails, len, a[i]);
        tails[p] = a[i];
        tail_idx[p] = i;
        parent[i] = p ? tail_idx[p - 1] : (size_t)-1;
        if (p == len) len++;
    }
    uint64_t h = 0;
    size_t count = 0;
    int ok = 1;
    int last = 0;
    if (len) {
        for (size_t i = tail_idx[len - 1]; i != (size_t)-1; i = parent[i]) {
            if (count && a[i] >= last) ok = 0;
            last = a[i];
            h = h * 1000003u + (uint32_t)a[i];
            count++;
        }
    }
    size_t len2 = 0;
    for (size_t i = 0; i < n; i++) {
        size_t p = upper_bound(tails, len2, a[i]);
        tails[p] = a[i];
        if (p == len2) len2++;
    }
    printf("n %zu\n", n);
    printf("lis_strict %zu reconstructed %zu valid %d hash %llu\n", len, count, ok,
           (unsigned long long)h);
    printf("lis_nondecreasing %zu\n", len2);
    free(a);
    free(tails);
    free(tail_idx);
    free(parent);
    return 0;
}
