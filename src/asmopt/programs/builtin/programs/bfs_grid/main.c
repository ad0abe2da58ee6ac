/* Breadth-first search on a generated grid maze: flood fill of every open region with one
 * queue, the corner-to-corner distance, distance statistics of the largest region, and a
 * checksum of every cell's distance from the first cell of its region.
 * Input: H W wall_percent seed (walls from a xorshift64* generator whose state is the
 * 64-bit seed, mixed by the splitmix64 finaliser). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>

static uint64_t s;

static uint32_t rnd(void)
{
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return (uint32_t)((s * 0x2545F4914F6CDD1DULL) >> 32);
}

int main(void)
{
    int H, W, pct;
    uint64_t seed;
    if (scanf("%d %d %d %" SCNu64, &H, &W, &pct, &seed) != 4 || H <= 0 || W <= 0) {
        printf("bad input\n");
        return 0;
    }
    s = seed + 0x9E3779B97F4A7C15ULL;
    s = (s ^ (s >> 30)) * 0xBF58476D1CE4E5B9ULL;
    s = (s ^ (s >> 27)) * 0x94D049BB133111EBULL;
    s ^= s >> 31;
    if (s == 0) s = 1;
    size_t cells = (size_t)H * (size_t)W;
    unsigned char *wall = malloc(cells);
    int *dist = malloc(cells * sizeof *dist);
    int *queue = malloc(cells * sizeof *queue);
    if (!wall || !dist || !queue) return 1;
    for (size_t i = 0; i < cells; i++) wall[i] = (int)(rnd() % 100) < pct;
    wall[0] = 0;
    wall[cells - 1] = 0;
    for (size_t i = 0; i < cells; i++) dist[i] = -1;

    static const int dr[4] = {1, -1, 0, 0};
    static const int dc[4] = {0, 0, 1, -1};
    int regions = 0;
    size_t largest = 0, largest_start = 0;
    int largest_ecc = 0;
    long long hist[8] = {0};
    uint64_t largest_dsum = 0;
    for (size_t startc = 0; startc < cells; startc++) {
        if (wall[startc] || dist[startc] >= 0) continue;
        regions++;
        size_t head = 0, tail = 0;
        queue[tail++] = (int)startc;
        dist[startc] = 0;
        while (head < tail) {
            int cur = queue[head++];
            int r = cur / W, c = cur % W;
            for (int d = 0; d < 4; d++) {
                int nr = r + dr[d], nc = c + dc[d];
                if (nr < 0 || nr >= H || nc < 0 || nc >= W) continue;
                int nx = nr * W + nc;
                if (wall[nx] || dist[nx] >= 0) continue;
                dist[nx] = dist[cur] + 1;
                queue[tail++] = nx;
            }
        }
        if (startc == 0) {
            printf("corner_distance %d\n", dist[cells - 1]);
            printf("corner_region %zu\n", tail);
        }
        if (tail > largest) {
            /* distances from this region's first cell: BFS order is sorted by distance */
            largest = tail;
            largest_start = startc;
            largest_ecc = dist[queue[tail - 1]];
            largest_dsum = 0;
            for (int b = 0; b < 8; b++) hist[b] = 0;
            for (size_t i = 0; i < tail; i++) {
                int d = dist[queue[i]];
                largest_dsum += (uint64_t)d;
                int b = 0;
                while (b < 7 && (d >> (2 * b + 2)) != 0) b++;
                hist[b]++;
            }
        }
    }
    uint64_t dist_hash = 0;
    for (size_t i = 0; i < cells; i++) dist_hash = dist_hash * 1000003u + (uint64_t)(dist[i] + 1);
    printf("regions %d largest %zu from %zu\n", regions, largest, largest_start);
    printf("eccentricity %d distance_sum %llu\n", largest_ecc, (unsigned long long)largest_dsum);
    printf("hist");
    for (int i = 0; i < 8; i++) printf(" %lld", hist[i]);
    printf("\ndist_hash %llu\n", (unsigned long long)dist_hash);
    free(wall);
    free(dist);
    free(queue);
    return 0;
}
