/* Top-down recursive merge sort of 64-bit keys with one scratch buffer.
 * Input: n seed bits (keys are masked to the low `bits` bits, so duplicates appear).
 * Output: distinct count, longest run of equal keys, a checksum of the sorted order. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void merge_sort(uint64_t *a, uint64_t *tmp, size_t lo, size_t hi)
{
    /* sorts a[lo, hi) */
    if (hi - lo < 2) return;
    if (hi - lo == 2) {
        if (a[lo] > a[lo + 1]) {
            uint64_t t = a[lo];
            a[lo] = a[lo + 1];
            a[lo + 1] = t;
        }
        return;
    }
    size_t mid = lo + (hi - lo) / 2;
    merge_sort(a, tmp, lo, mid);
    merge_sort(a, tmp, mid, hi);
    if (a[mid - 1] <= a[mid]) return;
    size_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi) {
        if (a[j] < a[i]) tmp[k++] = a[j++];
        else tmp[k++] = a[i++];
    }
    while (i < mid) tmp[k++] = a[i++];
    while (j < hi) tmp[k++] = a[j++];
    for (k = lo; k < hi; k++) a[k] = tmp[k];
}

int main(void)
{
    size_t n;
    unsigned long long seed;
    int bits;
    if (scanf("%zu %llu %d", &n, &seed, &bits) != 3 || bits < 1 || bits > 64) {
        printf("bad input\n");
        return 0;
    }
    uint64_t mask = bits == 64 ? ~0ULL : ((1ULL << bits) - 1);
    uint64_t *a = malloc((n ? n : 1) * sizeof *a);
    uint64_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!a || !tmp) return 1;
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) a[i] = splitmix(&s) & mask;
    merge_sort(a, tmp, 0, n);
    size_t distinct = 0, best_run = 0, run = 0;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && a[i] < a[i - 1]) {
            printf("not sorted at %zu\n", i);
            return 0;
        }
        if (i == 0 || a[i] != a[i - 1]) {
            distinct++;
            run = 1;
        } else {
            run++;
        }
        if (run > best_run) best_run = run;
        h = (h ^ a[i]) * 1099511628211ULL; /* FNV-1a over the sorted keys, all their bits */
    }
    printf("n %zu distinct %zu longest_run %zu\n", n, distinct, best_run);
    printf("hash %016llx\n", (unsigned long long)h);
    if (n) printf("first %llu last %llu\n", (unsigned long long)a[0], (unsigned long long)a[n - 1]);
    free(a);
    free(tmp);
    return 0;
}
