/* Bit tricks on a stream of 64-bit words, all written portably: SWAR population count,
 * bit reversal by swapping halves, trailing/leading zero counts by binary search, parity,
 * Gosper's next-same-popcount, and a Hamming-distance histogram between neighbours.
 * Input: n seed. */
#include <stdio.h>
#include <stdint.h>

static int popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}

static uint64_t reverse64(uint64_t x)
{
    x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
    x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
    x = ((x >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((x & 0x0F0F0F0F0F0F0F0FULL) << 4);
    x = ((x >> 8) & 0x00FF00FF00FF00FFULL) | ((x & 0x00FF00FF00FF00FFULL) << 8);
    x = ((x >> 16) & 0x0000FFFF0000FFFFULL) | ((x & 0x0000FFFF0000FFFFULL) << 16);
    return (x >> 32) | (x << 32);
}

static int ctz64(uint64_t x)
{
    if (!x) return 64;
    int n = 0;
    if (!(x & 0xFFFFFFFFULL)) { n += 32; x >>= 32; }
    if (!(x & 0xFFFFULL)) { n += 16; x >>= 16; }
    if (!(x & 0xFFULL)) { n += 8; x >>= 8; }
    if (!(x & 0xFULL)) { n += 4; x >>= 4; }
    if (!(x & 0x3ULL)) { n += 2; x >>= 2; }
    if (!(x & 0x1ULL)) { n += 1; }
    return n;
}

static int clz64(uint64_t x)
{
    if (!x) return 64;
    int n = 0;
    if (!(x >> 32)) { n += 32; x <<= 32; }
    if (!(x >> 48)) { n += 16; x <<= 16; }
    if (!(x >> 56)) { n += 8; x <<= 8; }
    if (!(x >> 60)) { n += 4; x <<= 4; }
    if (!(x >> 62)) { n += 2; x <<= 2; }
    if (!(x >> 63)) { n += 1; }
    return n;
}

static int parity64(uint64_t x)
{
    x ^= x >> 32;
    x ^= x >> 16;
    x ^= x >> 8;
    x ^= x >> 4;
    return (int)((0x6996u >> (x & 15)) & 1);
}

static uint64_t next_same_popcount(uint64_t x)
{
    /* Gosper's hack; wraps to 0 when there is no larger value */
    if (!x) return 0;
    uint64_t c = x & (0 - x);
    uint64_t r = x + c;
    if (!r) return 0;
    return (((r ^ x) >> 2) / c) | r;
}

int main(void)
{
    unsigned long long n, seed;
    if (scanf("%llu %llu", &n, &seed) != 2) {
        printf("bad input\n");
        return 0;
    }
    uint64_t x = seed ^ 0x9E3779B97F4A7C15ULL;
    if (!x) x = 1;
    uint64_t pop_total = 0, rev_xor = 0, tz_total = 0, lz_total = 0, par = 0, gos = 0, prev = 0;
    uint64_t hd_hist[9] = {0};
    for (unsigned long long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* vary the density of set bits */
        uint64_t w = (i & 3) == 0 ? x & (x >> 17) & (x >> 31) : (i & 3) == 1 ? x | (x << 9) : x;
        pop_total += (uint64_t)popcount64(w);
        rev_xor ^= reverse64(w) + i;
        tz_total += (uint64_t)ctz64(w);
        lz_total += (uint64_t)clz64(w);
        par += (uint64_t)parity64(w);
        gos += next_same_popcount(w) >> 32;
        int hd = popcount64(w ^ prev);
        hd_hist[hd / 8 < 8 ? hd / 8 : 8]++;
        prev = w;
    }
    printf("n %llu popcount %llu parity_odd %llu\n", n, (unsigned long long)pop_total,
           (unsigned long long)par);
    printf("ctz %llu clz %llu\n", (unsigned long long)tz_total, (unsigned long long)lz_total);
    printf("reverse_xor %016llx gosper %llu\n", (unsigned long long)rev_xor, (unsigned long long)gos);
    printf("hamming_hist");
    for (int i = 0; i < 9; i++) printf(" %llu", (unsigned long long)hd_hist[i]);
    printf("\n");
    return 0;
}
