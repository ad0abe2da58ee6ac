/* Minimum spanning forest with Kruskal's algorithm: edges bucketed by weight (counting
 * sort), then a union-find with path halving and union by size.
 * Input: n m maxw seed. Output: forest weight, components, edges used, a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

struct edge {
    uint32_t u, v, w;
};

static uint64_t st;

static uint32_t rnd(void)
{
    uint64_t z = (st += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return (uint32_t)((z ^ (z >> 31)) >> 16);
}

static uint32_t *parent, *size;

static uint32_t find(uint32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

int main(void)
{
    uint32_t n, m, maxw;
    unsigned long long seed;
    if (scanf("%u %u %u %llu", &n, &m, &maxw, &seed) != 4 || n == 0 || maxw == 0) {
        printf("bad input\n");
        return 0;
    }
    st = seed;
    size_t mm = m ? m : 1;
    struct edge *e = malloc(mm * sizeof *e);
    struct edge *sorted = malloc(mm * sizeof *sorted);
    uint32_t *bucket = calloc((size_t)maxw + 2, sizeof *bucket);
    parent = malloc((size_t)n * sizeof *parent);
    size = malloc((size_t)n * sizeof *size);
    if (!e || !sorted || !bucket || !parent || !size) return 1;
    for (uint32_t i = 0; i < m; i++) {
        e[i].u = rnd() % n;
        /* mostly near neighbours, so components merge slowly */
        e[i].v = (rnd() & 1) ? (e[i].u + 1 + rnd() % 100) % n : rnd() % n;
        e[i].w = 1 + rnd() % maxw;
        bucket[e[i].w + 1]++;
    }
    for (uint32_t w = 1; w <= maxw + 1; w++) bucket[w] += bucket[w - 1];
    for (uint32_t i = 0; i < m; i++) sorted[bucket[e[i].w]++] = e[i];
    for (uint32_t i = 0; i < n; i++) {
        parent[i] = i;
        size[i] = 1;
    }
    uint64_t total = 0, h = 0;
    uint32_t used = 0, maxused = 0;
    for (uint32_t i = 0; i < m && used + 1 < n; i++) {
        uint32_t a = find(sorted[i].u), b = find(sorted[i].v);
        if (a == b) continue;
        if (size[a] < size[b]) {
            uint32_t t = a;
            a = b;
            b = t;
        }
        parent[b] = a;
        size[a] += size[b];
        used++;
        total += sorted[i].w;
        if (sorted[i].w > maxused) maxused = sorted[i].w;
        h = h * 1000003u + i;
    }
    uint32_t comps = 0, biggest = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (find(i) == i) {
            comps++;
            if (size[i] > biggest) biggest = size[i];
        }
    }
    printf("forest_weight %llu edges_used %u max_edge %u\n", (unsigned long long)total, used,
           maxused);
    printf("components %u largest %u\n", comps, biggest);
    printf("choice_hash %llu\n", (unsigned long long)h);
    free(e); free(sorted); free(bucket); free(parent); free(size);
    return 0;
}
