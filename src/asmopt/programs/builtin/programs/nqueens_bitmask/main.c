/* N-queens on a board with blocked squares and weighted cells: count the placements with
 * the classic recursive bitmask search (columns and both diagonals as bit sets), per
 * first-row column, and find the heaviest placement (the most total cell weight, the first
 * found on ties) and the sum of all placements' weights (mod 2^64).
 * Input: n blocked seed (a splitmix64 stream of the 64-bit seed gives each cell a 32-bit
 * weight, then the blocked squares, rows 1..n-1 only). */
#include <stdio.h>
#include <stdint.h>
#include <inttypes.h>

static int n;
static uint32_t blocked[32];
static uint64_t weight[32][32];
static uint64_t nodes;
static uint64_t weight_sum, best_weight;
static uint32_t queen[32], best_queen[32]; /* the queen's bit in each row */
static int found;

static uint64_t sm_state;

static uint64_t splitmix64(void)
{
    uint64_t z = (sm_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* the index of a single set bit, by a de Bruijn multiply */
static int bit_index(uint32_t bit)
{
    static const int table[32] = {0,  1,  28, 2,  29, 14, 24, 3,  30, 22, 20,
                                  15, 25, 17, 4,  8,  31, 27, 13, 23, 21, 19,
                                  16, 7,  26, 12, 18, 6,  11, 5,  10, 9};
    return table[(uint32_t)(bit * 0x077CB531u) >> 27];
}

static uint64_t solve(int row, uint32_t cols, uint32_t d1, uint32_t d2)
{
    nodes++;
    if (row == n) {
        /* a placement: its weight from the queens' cells */
        uint64_t w = 0;
        for (int r = 0; r < n; r++) w += weight[r][bit_index(queen[r])];
        weight_sum += w;
        if (!found || w > best_weight) {
            found = 1;
            best_weight = w;
            for (int r = 0; r < n; r++) best_queen[r] = queen[r];
        }
        return 1;
    }
    uint32_t full = (n == 32) ? 0xFFFFFFFFu : ((1u << n) - 1);
    uint32_t avail = ~(cols | d1 | d2 | blocked[row]) & full;
    uint64_t count = 0;
    while (avail) {
        uint32_t bit = avail & (0u - avail);
        avail ^= bit;
        queen[row] = bit;
        count += solve(row + 1, cols | bit, (d1 | bit) << 1, (d2 | bit) >> 1);
    }
    return count;
}

int main(void)
{
    int nb;
    uint64_t seed;
    if (scanf("%d %d %" SCNu64, &n, &nb, &seed) != 3 || n < 1 || n > 20 || nb < 0) {
        printf("bad input\n");
        return 0;
    }
    sm_state = seed;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) weight[r][c] = splitmix64() >> 32;
    for (int i = 0; i < nb && n > 1; i++) {
        uint64_t s = splitmix64();
        int r = 1 + (int)(s % (unsigned)(n - 1));
        int c = (int)((s >> 32) % (unsigned)n);
        blocked[r] |= 1u << c;
    }
    uint64_t total = 0;
    uint32_t full = (1u << n) - 1;
    for (int c = 0; c < n; c++) {
        uint32_t bit = 1u << c;
        queen[0] = bit;
        uint64_t before = weight_sum;
        uint64_t k = solve(1, bit, (bit << 1) & full, bit >> 1);
        total += k;
        if (c < 10)
            printf("first_column %d solutions %" PRIu64 " weight_sum %" PRIu64 "\n", c, k,
                   weight_sum - before);
    }
    printf("n %d blocked %d solutions %" PRIu64 " nodes %" PRIu64 "\n", n, nb, total, nodes);
    printf("weight_sum %" PRIu64 "\n", weight_sum);
    if (found) {
        printf("best_weight %" PRIu64 " columns", best_weight);
        for (int r = 0; r < n; r++) printf(" %d", bit_index(best_queen[r]));
        printf("\n");
    } else {
        printf("best_weight none\n");
    }
    return 0;
}
