/* N-queens on a board with blocked squares: count placements with the classic recursive
 * bitmask search (columns and both diagonals as bit sets), per first-row column.
 * Input: n blocked seed (blocked squares are pseudo-random, rows 1..n-1 only). */
#include <stdio.h>
#include <stdint.h>

static int n;
static uint32_t blocked[32];
static uint64_t nodes;

static uint64_t solve(int row, uint32_t cols, uint32_t d1, uint32_t d2)
{
    nodes++;
    if (row == n) return 1;
    uint32_t full = (n == 32) ? 0xFFFFFFFFu : ((1u << n) - 1);
    uint32_t avail = ~(cols | d1 | d2 | blocked[row]) & full;
    uint64_t count = 0;
    while (avail) {
        uint32_t bit = avail & (0u - avail);
        avail ^= bit;
        count += solve(row + 1, cols | bit, (d1 | bit) << 1, (d2 | bit) >> 1);
    }
    return count;
}

int main(void)
{
    int nb;
    unsigned seed;
    if (scanf("%d %d %u", &n, &nb, &seed) != 3 || n < 1 || n > 20 || nb < 0) {
        printf("bad input\n");
        return 0;
    }
    uint32_t s = seed * 2654435761u + 1;
    for (int i = 0; i < nb && n > 1; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        int r = 1 + (int)(s % (unsigned)(n - 1));
        int c = (int)((s >> 8) % (unsigned)n);
        blocked[r] |= 1u << c;
    }
    uint64_t total = 0;
    uint32_t full = (1u << n) - 1;
    for (int c = 0; c < n; c++) {
        uint32_t bit = 1u << c;
        uint64_t k = solve(1, bit, (bit << 1) & full, bit >> 1);
        total += k;
        if (c < 10) printf("first_column %d solutions %llu\n", c, (unsigned long long)k);
    }
    printf("n %d blocked %d solutions %llu nodes %llu\n", n, nb, (unsigned long long)total,
           (unsigned long long)nodes);
    return 0;
}
