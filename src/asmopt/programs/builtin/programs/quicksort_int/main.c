/* Quicksort (median of three, Hoare partition, insertion sort below 16 elements).
 * Input: n seed mode. mode 0 uniform, 1 nearly sorted, 2 few distinct values, 3 descending.
 * Output: whether the result is sorted, a position-weighted checksum, min, median, max. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void insertion_sort(int *a, long lo, long hi)
{
    for (long i = lo + 1; i <= hi; i++) {
        int v = a[i];
        long j = i - 1;
        while (j >= lo && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

static void swap_int(int *x, int *y)
{
    int t = *x;
    *x = *y;
    *y = t;
}

static void quicksort(int *a, long lo, long hi)
{
    while (hi - lo >= 16) {
        long mid = lo + (hi - lo) / 2;
        if (a[mid] < a[lo]) swap_int(&a[mid], &a[lo]);
        if (a[hi] < a[lo]) swap_int(&a[hi], &a[lo]);
        if (a[hi] < a[mid]) swap_int(&a[hi], &a[mid]);
        int pivot = a[mid];
        long i = lo - 1, j = hi + 1;
        for (;;) {
            do { i++; } while (a[i] < pivot);
            do { j--; } while (a[j] > pivot);
            if (i >= j) break;
            swap_int(&a[i], &a[j]);
        }
        /* recurse into the smaller part, loop on the larger one */
        if (j - lo < hi - j) {
            quicksort(a, lo, j);
            lo = j + 1;
        } else {
            quicksort(a, j + 1, hi);
            hi = j;
        }
    }
    insertion_sort(a, lo, hi);
}

int main(void)
{
    long n;
    unsigned long long seed;
    int mode;
    if (scanf("%ld %llu %d", &n, &seed, &mode) != 3 || n < 0) {
        printf("bad input\n");
        return 0;
    }
    rng_state = seed * 2654435761ULL + 0x9E3779B97F4A7C15ULL;
    if (rng_state == 0) rng_state = 1;
    int *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
    if (!a) return 1;
    for (long i = 0; i < n; i++) {
        uint64_t r = next_u64();
        switch (mode) {
        case 1: a[i] = (int)(i * 4) + (int)(r % 64) - 32; break;
        case 2: a[i] = (int)(r % 17) - 8; break;
        case 3: a[i] = (int)(n - i) * 3 + (int)(r % 5); break;
        default: a[i] = (int)(r % 2000000001ULL) - 1000000000; break;
        }
    }
    quicksort(a, 0, n - 1);
    int sorted = 1;
    uint64_t sum = 0;
    for (long i = 0; i < n; i++) {
        if (i > 0 && a[i - 1] > a[i]) sorted = 0;
        sum = sum * 31 + (uint64_t)(uint32_t)a[i] * (uint64_t)(i + 1);
    }
    printf("sorted %d\n", sorted);
    printf("checksum %llu\n", (unsigned long long)sum);
    if (n > 0)
        printf("min %d median %d max %d\n", a[0], a[n / 2], a[n - 1]);
    else
        printf("empty\n");
    free(a);
    return 0;
}
