/* Binary heaps: heapsort of the whole array plus a streaming top-k with a bounded min-heap.
 * Input: n k seed. Output: checksum of the sorted array, sum and checksum of the k largest. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static uint64_t state;

static uint32_t rnd(void)
{
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(state >> 33);
}

static void sift_down_max(int *a, size_t n, size_t i)
{
    int v = a[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && a[c + 1] > a[c]) c++;
        if (a[c] <= v) break;
        a[i] = a[c];
        i = c;
    }
    a[i] = v;
}

static void heap_sort(int *a, size_t n)
{
    if (n < 2) return;
    for (size_t i = n / 2; i-- > 0;) sift_down_max(a, n, i);
    for (size_t end = n - 1; end > 0; end--) {
        int t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down_max(a, end, 0);
    }
}

static void sift_down_min(int *h, size_t n, size_t i)
{
    int v = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}

static void sift_up_min(int *h, size_t i)
{
    int v = h[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p] <= v) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

int main(void)
{
    size_t n, k;
    unsigned long long seed;
    if (scanf("%zu %zu %llu", &n, &k, &seed) != 3) {
        printf("bad input\n");
        return 0;
    }
    state = seed ^ 0x5DEECE66DULL;
    int *a = malloc((n ? n : 1) * sizeof *a);
    int *heap = malloc((k ? k : 1) * sizeof *heap);
    if (!a || !heap) return 1;
    for (size_t i = 0; i < n; i++) a[i] = (int)(rnd() % 1000000007u) - 500000000;

    size_t hn = 0;
    for (size_t i = 0; i < n && k > 0; i++) {
        if (hn < k) {
            heap[hn] = a[i];
            sift_up_min(heap, hn);
            hn++;
        } else if (a[i] > heap[0]) {
            heap[0] = a[i];
            sift_down_min(heap, hn, 0);
        }
    }
    long long topsum = 0;
    for (size_t i = 0; i < hn; i++) topsum += heap[i];

    heap_sort(a, n);
    uint64_t check = 0;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (i && a[i - 1] > a[i]) ok = 0;
        check = (check << 5) - check + (uint32_t)a[i];
    }
    long long tail = 0;
    for (size_t i = 0; i < hn; i++) tail += a[n - 1 - i];
    printf("sorted %d checksum %llu\n", ok, (unsigned long long)check);
    printf("top%zu sum %lld matches %d\n", hn, topsum, topsum == tail);
    if (n) printf("min %d max %d\n", a[0], a[n - 1]);
    free(a);
    free(heap);
    return 0;
}
