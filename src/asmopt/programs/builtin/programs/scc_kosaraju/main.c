/* Strongly connected components (Kosaraju) with iterative depth-first searches over
 * compressed forward and reverse adjacency, then the condensation's size and source count
 * and a hash of every vertex's component number (components in topological order).
 * Input: n m seed. Edges are clustered so that the graph has many medium-sized components. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static uint64_t st;

static uint32_t rnd(void)
{
    st ^= st >> 12;
    st ^= st << 25;
    st ^= st >> 27;
    return (uint32_t)((st * 0x2545F4914F6CDD1DULL) >> 32);
}

static void build_csr(uint32_t n, uint32_t m, const uint32_t *from, const uint32_t *dst,
                      uint32_t *start, uint32_t *adj)
{
    for (uint32_t i = 0; i <= n; i++) start[i] = 0;
    for (uint32_t i = 0; i < m; i++) start[from[i] + 1]++;
    for (uint32_t i = 0; i < n; i++) start[i + 1] += start[i];
    for (uint32_t i = 0; i < m; i++) adj[start[from[i]]++] = dst[i];
    for (uint32_t i = n; i > 0; i--) start[i] = start[i - 1];
    start[0] = 0;
}

int main(void)
{
    uint32_t n, m;
    unsigned long long seed;
    if (scanf("%u %u %llu", &n, &m, &seed) != 3 || n == 0) {
        printf("bad input\n");
        return 0;
    }
    st = seed * 0x9E3779B97F4A7C15ULL + 7;
    size_t mm = m ? m : 1;
    uint32_t *eu = malloc(mm * 4), *ev = malloc(mm * 4);
    uint32_t *fs = malloc(((size_t)n + 1) * 4), *fa = malloc(mm * 4);
    uint32_t *rs = malloc(((size_t)n + 1) * 4), *ra = malloc(mm * 4);
    uint32_t *order = malloc((size_t)n * 4), *comp = malloc((size_t)n * 4);
    uint32_t *stack = malloc((size_t)n * 4), *it = malloc((size_t)n * 4);
    unsigned char *seen = calloc(n, 1);
    if (!eu || !ev || !fs || !fa || !rs || !ra || !order || !comp || !stack || !it || !seen)
        return 1;
    uint32_t cluster = 64;
    for (uint32_t i = 0; i < m; i++) {
        uint32_t u = rnd() % n, v;
        if (rnd() % 8) v = (u / cluster) * cluster + rnd() % cluster;
        else v = rnd() % n;
        if (v >= n) v = rnd() % n;
        eu[i] = u;
        ev[i] = v;
    }
    build_csr(n, m, eu, ev, fs, fa);
    build_csr(n, m, ev, eu, rs, ra);

    /* pass 1: finishing order on the forward graph */
    uint32_t on = 0;
    for (uint32_t r = 0; r < n; r++) {
        if (seen[r]) continue;
        uint32_t sp = 0;
        stack[sp] = r;
        it[sp] = fs[r];
        sp++;
        seen[r] = 1;
        while (sp) {
            uint32_t v = stack[sp - 1];
            if (it[sp - 1] < fs[v + 1]) {
                uint32_t w = fa[it[sp - 1]++];
                if (!seen[w]) {
                    seen[w] = 1;
                    stack[sp] = w;
                    it[sp] = fs[w];
                    sp++;
                }
            } else {
                order[on++] = v;
                sp--;
            }
        }
    }
    /* pass 2: reverse graph in decreasing finishing time */
    for (uint32_t i = 0; i < n; i++) comp[i] = UINT32_MAX;
    uint32_t ncomp = 0, largest = 0, singles = 0;
    uint64_t size_hash = 0;
    for (uint32_t k = n; k-- > 0;) {
        uint32_t r = order[k];
        if (comp[r] != UINT32_MAX) continue;
        uint32_t sp = 0, size = 0;
        stack[sp++] = r;
        comp[r] = ncomp;
        while (sp) {
            uint32_t v = stack[--sp];
            size++;
            for (uint32_t e = rs[v]; e < rs[v + 1]; e++) {
                uint32_t w = ra[e];
                if (comp[w] == UINT32_MAX) {
                    comp[w] = ncomp;
                    stack[sp++] = w;
                }
            }
        }
        if (size > largest) largest = size;
        if (size == 1) singles++;
        size_hash = size_hash * 131 + size;
        ncomp++;
    }
    /* condensation: count cross edges and components without incoming cross edges */
    unsigned char *has_in = calloc(ncomp ? ncomp : 1, 1);
    if (!has_in) return 1;
    uint32_t cross = 0;
    for (uint32_t i = 0; i < m; i++) {
        if (comp[eu[i]] != comp[ev[i]]) {
            cross++;
            has_in[comp[ev[i]]] = 1;
        }
    }
    uint32_t sources = 0;
    for (uint32_t c = 0; c < ncomp; c++) sources += !has_in[c];
    /* each vertex's component, numbered in Kosaraju's (topological) order */
    uint64_t label_hash = 0;
    for (uint32_t v = 0; v < n; v++) label_hash = label_hash * 1000003u + comp[v];
    printf("components %u largest %u singletons %u\n", ncomp, largest, singles);
    printf("cross_edges %u source_components %u\n", cross, sources);
    printf("size_hash %llu label_hash %llu\n", (unsigned long long)size_hash,
           (unsigned long long)label_hash);
    free(eu); free(ev); free(fs); free(fa); free(rs); free(ra); free(order); free(comp);
    free(stack); free(it); free(seen); free(has_in);
    return 0;
}
