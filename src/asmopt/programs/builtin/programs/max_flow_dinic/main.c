/* Maximum flow with Dinic's algorithm (BFS level graph + recursive blocking-flow DFS with
 * current-arc pointers) on a generated layered network, followed by a min-cut check and a
 * checksum of the flow on every arc.
 * Input: layers width degree maxcap seed. Source feeds layer 0, the last layer feeds sink;
 * the arcs between layers come from a 64-bit LCG started at the 64-bit seed. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>

struct arc {
    int to;
    int next;
    long long cap;
};

static struct arc *arcs;
static int *head, *level, *cur, *queue;
static int narcs, nodes;

static uint64_t s;

static uint32_t rnd(void)
{
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(s >> 33);
}

static void add_edge(int u, int v, long long c)
{
    arcs[narcs] = (struct arc){v, head[u], c};
    head[u] = narcs++;
    arcs[narcs] = (struct arc){u, head[v], 0};
    head[v] = narcs++;
}

static int bfs(int src, int sink)
{
    for (int i = 0; i < nodes; i++) level[i] = -1;
    int qh = 0, qt = 0;
    queue[qt++] = src;
    level[src] = 0;
    while (qh < qt) {
        int u = queue[qh++];
        for (int e = head[u]; e >= 0; e = arcs[e].next) {
            if (arcs[e].cap > 0 && level[arcs[e].to] < 0) {
                level[arcs[e].to] = level[u] + 1;
                queue[qt++] = arcs[e].to;
            }
        }
    }
    return level[sink] >= 0;
}

static long long dfs(int u, int sink, long long pushed)
{
    if (u == sink) return pushed;
    for (int *e = &cur[u]; *e >= 0; *e = arcs[*e].next) {
        struct arc *a = &arcs[*e];
        if (a->cap <= 0 || level[a->to] != level[u] + 1) continue;
        long long got = dfs(a->to, sink, pushed < a->cap ? pushed : a->cap);
        if (got > 0) {
            a->cap -= got;
            arcs[*e ^ 1].cap += got;
            return got;
        }
    }
    return 0;
}

int main(void)
{
    int layers, width, degree, maxcap;
    uint64_t seed;
    if (scanf("%d %d %d %d %" SCNu64, &layers, &width, &degree, &maxcap, &seed) != 5 || layers < 1 ||
        width < 1 || degree < 1 || maxcap < 1) {
        printf("bad input\n");
        return 0;
    }
    s = seed;
    nodes = layers * width + 2;
    int src = nodes - 2, sink = nodes - 1;
    long long maxarcs = 2LL * ((long long)layers * width * degree + 2LL * width);
    arcs = malloc((size_t)maxarcs * sizeof *arcs);
    head = malloc((size_t)nodes * sizeof *head);
    level = malloc((size_t)nodes * sizeof *level);
    cur = malloc((size_t)nodes * sizeof *cur);
    queue = malloc((size_t)nodes * sizeof *queue);
    if (!arcs || !head || !level || !cur || !queue) return 1;
    for (int i = 0; i < nodes; i++) head[i] = -1;
    for (int j = 0; j < width; j++) add_edge(src, j, (long long)maxcap * degree);
    for (int l = 0; l + 1 < layers; l++) {
        for (int j = 0; j < width; j++) {
            int u = l * width + j;
            for (int d = 0; d < degree; d++) {
                int v = (l + 1) * width + (int)((unsigned)(j + (int)(rnd() % 7) - 3 + width) %
                                                 (unsigned)width);
                if (rnd() % 4 == 0) v = (l + 1) * width + (int)(rnd() % (unsigned)width);
                add_edge(u, v, 1 + (long long)(rnd() % (unsigned)maxcap));
            }
        }
    }
    for (int j = 0; j < width; j++) add_edge((layers - 1) * width + j, sink, (long long)maxcap * degree);

    long long flow = 0;
    int phases = 0;
    long long augmentations = 0;
    while (bfs(src, sink)) {
        phases++;
        for (int i = 0; i < nodes; i++) cur[i] = head[i];
        long long f;
        while ((f = dfs(src, sink, (long long)1 << 60)) > 0) {
            flow += f;
            augmentations++;
        }
    }
    /* after the last BFS, level >= 0 marks the source side of a minimum cut */
    long long cut = 0;
    int source_side = 0;
    for (int u = 0; u < nodes; u++) {
        if (level[u] < 0) continue;
        source_side++;
        for (int e = head[u]; e >= 0; e = arcs[e].next) {
            if ((e & 1) == 0 && level[arcs[e].to] < 0) cut += arcs[e].cap + arcs[e ^ 1].cap;
        }
    }
    /* the flow on an arc is what its reverse arc (capacity 0 at first) has gained */
    uint64_t flow_hash = 0;
    for (int e = 0; e < narcs; e += 2) flow_hash = flow_hash * 1000003u + (uint64_t)arcs[e + 1].cap;
    printf("max_flow %lld\n", flow);
    printf("min_cut %lld equal %d\n", cut, cut == flow);
    printf("phases %d augmentations %lld source_side %d\n", phases, augmentations, source_side);
    printf("flow_hash %llu\n", (unsigned long long)flow_hash);
    free(arcs); free(head); free(level); free(cur); free(queue);
    return 0;
}
