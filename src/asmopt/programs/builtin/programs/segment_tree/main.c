/* Recursive segment tree with lazy propagation supporting range add, range sum and range
 * minimum, driven by a generated sequence of operations.
 * Input: n ops seed. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <limits.h>

static long long *sum, *mn, *lazy;
static int *init;

static void build(int node, int lo, int hi)
{
    lazy[node] = 0;
    if (lo == hi) {
        sum[node] = mn[node] = init[lo];
        return;
    }
    int mid = (lo + hi) / 2;
    build(2 * node, lo, mid);
    build(2 * node + 1, mid + 1, hi);
    sum[node] = sum[2 * node] + sum[2 * node + 1];
    mn[node] = mn[2 * node] < mn[2 * node + 1] ? mn[2 * node] : mn[2 * node + 1];
}

static void apply(int node, int lo, int hi, long long v)
{
    sum[node] += v * (hi - lo + 1);
    mn[node] += v;
    lazy[node] += v;
}

static void push(int node, int lo, int hi)
{
    if (lazy[node]) {
        int mid = (lo + hi) / 2;
        apply(2 * node, lo, mid, lazy[node]);
        apply(2 * node + 1, mid + 1, hi, lazy[node]);
        lazy[node] = 0;
    }
}

static void update(int node, int lo, int hi, int l, int r, long long v)
{
    if (r < lo || hi < l) return;
    if (l <= lo && hi <= r) {
        apply(node, lo, hi, v);
        return;
    }
    push(node, lo, hi);
    int mid = (lo + hi) / 2;
    update(2 * node, lo, mid, l, r, v);
    update(2 * node + 1, mid + 1, hi, l, r, v);
    sum[node] = sum[2 * node] + sum[2 * node + 1];
    mn[node] = mn[2 * node] < mn[2 * node + 1] ? mn[2 * node] : mn[2 * node + 1];
}

static long long query_sum(int node, int lo, int hi, int l, int r)
{
    if (r < lo || hi < l) return 0;
    if (l <= lo && hi <= r) return sum[node];
    push(node, lo, hi);
    int mid = (lo + hi) / 2;
    return query_sum(2 * node, lo, mid, l, r) + query_sum(2 * node + 1, mid + 1, hi, l, r);
}

static long long query_min(int node, int lo, int hi, int l, int r)
{
    if (r < lo || hi < l) return LLONG_MAX;
    if (l <= lo && hi <= r) return mn[node];
    push(node, lo, hi);
    int mid = (lo + hi) / 2;
    long long a = query_min(2 * node, lo, mid, l, r);
    long long b = query_min(2 * node + 1, mid + 1, hi, l, r);
    return a < b ? a : b;
}

int main(void)
{
    int n, ops;
    unsigned long long seed;
    if (scanf("%d %d %llu", &n, &ops, &seed) != 3 || n < 1 || ops < 0) {
        printf("bad input\n");
        return 0;
    }
    sum = malloc(4 * (size_t)n * sizeof *sum);
    mn = malloc(4 * (size_t)n * sizeof *mn);
    lazy = malloc(4 * (size_t)n * sizeof *lazy);
    init = malloc((size_t)n * sizeof *init);
    if (!sum || !mn || !lazy || !init) return 1;
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        init[i] = (int)((x >> 33) % 2001) - 1000;
    }
    build(1, 0, n - 1);
    uint64_t hs = 0, hm = 0;
    long long updates = 0;
    for (int t = 0; t < ops; t++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t r = (uint32_t)(x >> 32);
        int l = (int)(r % (uint32_t)n);
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        int len = 1 + (int)((x >> 40) % (uint64_t)(n / 8 + 1));
        int rr = l + len - 1 < n ? l + len - 1 : n - 1;
        int kind = (int)((x >> 20) % 3);
        if (kind == 0) {
            long long v = (long long)((x >> 8) % 201) - 100;
            update(1, 0, n - 1, l, rr, v);
            updates++;
        } else if (kind == 1) {
            hs = hs * 1000003u + (uint64_t)query_sum(1, 0, n - 1, l, rr);
        } else {
            hm = hm * 1000003u + (uint64_t)query_min(1, 0, n - 1, l, rr);
        }
    }
    printf("n %d ops %d updates %lld\n", n, ops, updates);
    printf("sum_hash %llu min_hash %llu\n", (unsigned long long)hs, (unsigned long long)hm);
    printf("total %lld global_min %lld\n", query_sum(1, 0, n - 1, 0, n - 1),
           query_min(1, 0, n - 1, 0, n - 1));
    free(sum); free(mn); free(lazy); free(init);
    return 0;
}
