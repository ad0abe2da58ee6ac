/* Fenwick (binary indexed) trees over a list read from stdin: the inversion count after
 * coordinate compression (qsort, then binary search for ranks), then a generated
 * stream of point updates and prefix-sum / order-statistic queries.
 * Input: n, n integers, then ops seed. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static long long *bit;
static int bn;

static void bit_add(int i, long long v)
{
    for (; i <= bn; i += i & -i) bit[i] += v;
}

static long long bit_sum(int i)
{
    long long s = 0;
    for (; i > 0; i -= i & -i) s += bit[i];
    return s;
}

/* smallest index whose prefix sum reaches k (all values non-negative); bn+1 if none */
static int bit_find(long long k)
{
    int pos = 0, step = 1;
    while (step * 2 <= bn) step *= 2;
    for (; step; step >>= 1) {
        if (pos + step <= bn && bit[pos + step] < k) {
            pos += step;
            k -= bit[pos];
        }
    }
    return pos + 1;
}

int main(void)
{
    int n;
    if (scanf("%d", &n) != 1 || n < 0) {
        printf("bad input\n");
        return 0;
    }
    int *a = malloc((size_t)(n ? n : 1) * sizeof *a);
    int *sorted = malloc((size_t)(n ? n : 1) * sizeof *sorted);
    if (!a || !sorted) return 1;
    for (int i = 0; i < n; i++) {
        if (scanf("%d", &a[i]) != 1) {
            printf("bad value\n");
            return 0;
        }
        sorted[i] = a[i];
    }
    long long ops;
    unsigned long long seed;
    if (scanf("%lld %llu", &ops, &seed) != 2 || ops < 0) {
        printf("bad input\n");
        return 0;
    }
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_int);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || sorted[i] != sorted[i - 1]) sorted[m++] = sorted[i];
    bn = m > 0 ? m : 1;
    bit = calloc((size_t)bn + 1, sizeof *bit);
    if (!bit) return 1;
    long long inversions = 0;
    for (int i = n - 1; i >= 0; i--) {
        /* rank by binary search in the distinct values */
        int lo = 0, hi = m - 1;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (sorted[mid] < a[i]) lo = mid + 1;
            else hi = mid;
        }
        int rank = lo + 1;
        inversions += bit_sum(rank - 1);
        bit_add(rank, 1);
    }
    printf("n %d distinct %d inversions %lld\n", n, m, inversions);
    /* now bit holds the multiset of ranks: mutate it with the generated stream */
    uint64_t x = seed | 1, h = 0;
    long long total = n;
    for (long long t = 0; t < ops; t++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int pos = 1 + (int)(x % (uint64_t)bn);
        switch ((x >> 32) & 3) {
        case 0:
            bit_add(pos, 1);
            total++;
            break;
        case 1:
            if (bit_sum(pos) - bit_sum(pos - 1) > 0) {
                bit_add(pos, -1);
                total--;
            }
            break;
        case 2:
            h = h * 31 + (uint64_t)bit_sum(pos);
            break;
        default:
            if (total > 0) h = h * 31 + (uint64_t)bit_find(1 + (long long)((x >> 40) % (uint64_t)total));
            break;
        }
    }
    int median = total > 0 ? bit_find((total + 1) / 2) : 0;
    printf("ops %lld size %lld median_rank %d", ops, total, median);
    if (total > 0 && m > 0 && median <= m) printf(" median_value %d", sorted[median - 1]);
    printf("\nhash %llu\n", (unsigned long long)h);
    free(a); free(sorted); free(bit);
    return 0;
}
