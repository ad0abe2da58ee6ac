/* Dijkstra's shortest paths with a binary heap (lazy deletion) on a generated sparse
 * directed graph in compressed adjacency form (edges from a 64-bit LCG seeded with the
 * whole seed).
 * Input: n m seed sources. Runs from `sources` different start vertices; prints per source
 * the reached count, farthest distance, distance sum and settled count, then a hash of
 * every source's whole distance vector. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

struct item {
    uint64_t dist;
    uint32_t node;
};

static uint64_t st;

static uint32_t rnd(void)
{
    st = st * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(st >> 32);
}

static struct item *heap;
static size_t heap_n;

static void push(uint64_t d, uint32_t v)
{
    size_t i = heap_n++;
    while (i > 0) {
        size_t p = (i - 1) >> 1;
        if (heap[p].dist <= d) break;
        heap[i] = heap[p];
        i = p;
    }
    heap[i].dist = d;
    heap[i].node = v;
}

static struct item pop(void)
{
    struct item top = heap[0];
    struct item last = heap[--heap_n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= heap_n) break;
        if (c + 1 < heap_n && heap[c + 1].dist < heap[c].dist) c++;
        if (heap[c].dist >= last.dist) break;
        heap[i] = heap[c];
        i = c;
    }
    if (heap_n) heap[i] = last;
    return top;
}

int main(void)
{
    uint32_t n, m, sources;
    unsigned long long seed;
    if (scanf("%u %u %llu %u", &n, &m, &seed, &sources) != 4 || n == 0) {
        printf("bad input\n");
        return 0;
    }
    st = seed;
    uint32_t *eu = malloc((size_t)(m ? m : 1) * sizeof *eu);
    uint32_t *start = calloc((size_t)n + 1, sizeof *start);
    uint32_t *to = malloc((size_t)(m ? m : 1) * sizeof *to);
    uint32_t *w = malloc((size_t)(m ? m : 1) * sizeof *w);
    uint32_t *ev = malloc((size_t)(m ? m : 1) * sizeof *ev);
    uint32_t *ew = malloc((size_t)(m ? m : 1) * sizeof *ew);
    uint64_t *dist = malloc((size_t)n * sizeof *dist);
    heap = malloc(((size_t)m + 1) * sizeof *heap);
    if (!eu || !start || !to || !w || !ev || !ew || !dist || !heap) return 1;
    for (uint32_t i = 0; i < m; i++) {
        /* mostly local edges plus some long jumps */
        uint32_t u = rnd() % n;
        uint32_t v = (rnd() & 3) ? (u + 1 + rnd() % 16) % n : rnd() % n;
        eu[i] = u;
        ev[i] = v;
        ew[i] = 1 + rnd() % 1000;
        start[u + 1]++;
    }
    for (uint32_t i = 0; i < n; i++) start[i + 1] += start[i];
    uint32_t *fill = malloc((size_t)n * sizeof *fill);
    if (!fill) return 1;
    for (uint32_t i = 0; i < n; i++) fill[i] = start[i];
    for (uint32_t i = 0; i < m; i++) {
        uint32_t p = fill[eu[i]]++;
        to[p] = ev[i];
        w[p] = ew[i];
    }
    const uint64_t INF = ~0ULL;
    uint64_t total_hash = 0;
    for (uint32_t s = 0; s < sources; s++) {
        uint32_t src = (uint32_t)(((uint64_t)s * 2654435761u) % n);
        for (uint32_t i = 0; i < n; i++) dist[i] = INF;
        dist[src] = 0;
        heap_n = 0;
        push(0, src);
        uint64_t pops = 0;
        while (heap_n) {
            struct item it = pop();
            if (it.dist != dist[it.node]) continue;
            pops++;
            for (uint32_t e = start[it.node]; e < start[it.node + 1]; e++) {
                uint64_t nd = it.dist + w[e];
                if (nd < dist[to[e]]) {
                    dist[to[e]] = nd;
                    push(nd, to[e]);
                }
            }
        }
        uint32_t reached = 0;
        uint64_t far = 0, sum = 0;
        uint64_t vh = 14695981039346656037ULL; /* FNV-1a over the whole distance vector */
        for (uint32_t i = 0; i < n; i++) {
            vh = (vh ^ dist[i]) * 1099511628211ULL;
            if (dist[i] == INF) continue;
            reached++;
            sum += dist[i];
            if (dist[i] > far) far = dist[i];
        }
        total_hash = total_hash * 1000003u + vh;
        printf("source %u reached %u farthest %llu sum %llu settled %llu\n", src, reached,
               (unsigned long long)far, (unsigned long long)sum, (unsigned long long)pops);
    }
    printf("hash %llu\n", (unsigned long long)total_hash);
    free(eu); free(start); free(to); free(w); free(ev); free(ew); free(dist); free(heap); free(fill);
    return 0;
}
