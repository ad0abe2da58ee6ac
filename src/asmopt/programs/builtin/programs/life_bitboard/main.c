/* Conway's Game of Life on a torus, 64 cells per machine word, with the neighbour count
 * computed by bit-parallel adders (no per-cell loops).
 * Input: rows words_per_row generations density_percent seed. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static int popcount64(uint64_t x)
{
    int c = 0;
    while (x) {
        x &= x - 1;
        c++;
    }
    return c;
}

int main(void)
{
    int H, WW, gens, density;
    unsigned long long seed;
    if (scanf("%d %d %d %d %llu", &H, &WW, &gens, &density, &seed) != 5 || H < 3 || WW < 1 ||
        gens < 0) {
        printf("bad input\n");
        return 0;
    }
    size_t words = (size_t)H * (size_t)WW;
    uint64_t *g = malloc(words * sizeof *g), *ng = malloc(words * sizeof *ng);
    if (!g || !ng) return 1;
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < words; i++) {
        uint64_t w = 0;
        for (int b = 0; b < 64; b++) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            if ((x * 0x2545F4914F6CDD1DULL >> 32) % 100 < (unsigned)density) w |= 1ULL << b;
        }
        g[i] = w;
    }
    for (int gen = 0; gen < gens; gen++) {
        for (int r = 0; r < H; r++) {
            const uint64_t *up = g + (size_t)((r + H - 1) % H) * WW;
            const uint64_t *mid = g + (size_t)r * WW;
            const uint64_t *dn = g + (size_t)((r + 1) % H) * WW;
            uint64_t *out = ng + (size_t)r * WW;
            for (int c = 0; c < WW; c++) {
                int cl = c == 0 ? WW - 1 : c - 1, cr = c == WW - 1 ? 0 : c + 1;
                /* bit b of a word is column 64*c+b; west neighbour is bit b-1 */
                uint64_t n[8];
                n[0] = (up[c] << 1) | (up[cl] >> 63);
                n[1] = up[c];
                n[2] = (up[c] >> 1) | (up[cr] << 63);
                n[3] = (mid[c] << 1) | (mid[cl] >> 63);
                n[4] = (mid[c] >> 1) | (mid[cr] << 63);
                n[5] = (dn[c] << 1) | (dn[cl] >> 63);
                n[6] = dn[c];
                n[7] = (dn[c] >> 1) | (dn[cr] << 63);
                /* three-bit counter s2 s1 s0, saturating bit s2 means >= 4 */
                uint64_t s0 = 0, s1 = 0, s2 = 0;
                for (int k = 0; k < 8; k++) {
                    uint64_t c0 = s0 & n[k];
                    s0 ^= n[k];
                    uint64_t c1 = s1 & c0;
                    s1 ^= c0;
                    s2 |= c1;
                }
                uint64_t alive = mid[c];
                out[c] = ~s2 & s1 & (s0 | alive);
            }
        }
        uint64_t *t = g;
        g = ng;
        ng = t;
    }
    uint64_t pop = 0, h = 0;
    for (size_t i = 0; i < words; i++) {
        pop += (uint64_t)popcount64(g[i]);
        h = (h ^ g[i]) * 0x100000001B3ULL;
    }
    printf("cells %llu generations %d population %llu\n", (unsigned long long)words * 64, gens,
           (unsigned long long)pop);
    printf("hash %016llx\n", (unsigned long long)h);
    uint64_t first_row = 0;
    for (int c = 0; c < WW; c++) first_row += (uint64_t)popcount64(g[c]);
    printf("row0 %llu\n", (unsigned long long)first_row);
    free(g);
    free(ng);
    return 0;
}
