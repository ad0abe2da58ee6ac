/* A randomised factorial: the product of N factors f_1 ... f_N drawn from a seed (each
 * in [2, 2^32]) as a big integer in base 10^9 limbs (schoolbook multiply by a small
 * factor, as for N!), then its digit count, digit sum, leading digits, trailing zeros
 * (checked against min(v2, v5) summed over the factors) and the last non-zero digits.
 * Input: N seed (factors from a splitmix64 stream of the 64-bit seed). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>

#define BASE 1000000000u

static uint64_t sm_state;

static uint64_t splitmix64(void)
{
    uint64_t z = (sm_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int main(void)
{
    uint32_t N;
    uint64_t seed;
    if (scanf("%" SCNu32 " %" SCNu64, &N, &seed) != 2 || N > 200000) {
        printf("bad input\n");
        return 0;
    }
    sm_state = seed;
    size_t cap = 16 + 2 * (size_t)N; /* a factor below 10^18 adds at most two limbs */
    uint32_t *limb = malloc(cap * sizeof *limb);
    if (!limb) return 1;
    size_t len = 1;
    limb[0] = 1;
    uint64_t twos = 0, fives = 0;
    for (uint32_t k = 0; k < N; k++) {
        uint64_t f = 2 + splitmix64() % 0xFFFFFFFFu; /* [2, 2^32] */
        for (uint64_t g = f; !(g & 1); g >>= 1) twos++;
        for (uint64_t g = f; g % 5 == 0; g /= 5) fives++;
        uint64_t carry = 0;
        for (size_t i = 0; i < len; i++) {
            uint64_t t = (uint64_t)limb[i] * f + carry;
            limb[i] = (uint32_t)(t % BASE);
            carry = t / BASE;
        }
        while (carry) {
            limb[len++] = (uint32_t)(carry % BASE);
            carry /= BASE;
        }
    }
    uint64_t digit_sum = 0;
    uint32_t trailing = 0;
    int seen_nonzero = 0;
    for (size_t i = 0; i < len; i++) {
        uint32_t v = limb[i];
        for (int k = 0; k < 9; k++) {
            uint32_t d = v % 10;
            v /= 10;
            digit_sum += d;
            if (!seen_nonzero) {
                if (d == 0) trailing++;
                else seen_nonzero = 1;
            }
        }
    }
    uint32_t top = limb[len - 1];
    int top_digits = 1;
    for (uint32_t t = top; t >= 10; t /= 10) top_digits++;
    size_t digits = (len - 1) * 9 + (size_t)top_digits;
    uint64_t expected_zeros = twos < fives ? twos : fives;
    printf("N %" PRIu32 " digits %zu digit_sum %" PRIu64 " trailing_zeros %" PRIu32 "\n", N,
           digits, digit_sum, trailing);
    printf("zeros_check %" PRIu64 " agree %d\n", expected_zeros, expected_zeros == trailing);
    printf("leading %" PRIu32, top);
    if (len >= 2) printf("%09" PRIu32, limb[len - 2]);
    printf("\n");
    /* last nine non-zero-suffix digits: drop trailing zeros, then take the low digits */
    uint32_t skip_limbs = trailing / 9, skip_digits = trailing % 9;
    uint64_t low = limb[skip_limbs];
    if (skip_limbs + 1 < len) low += (uint64_t)limb[skip_limbs + 1] * BASE;
    for (uint32_t k = 0; k < skip_digits; k++) low /= 10;
    printf("last_nonzero_digits %09" PRIu64 "\n", low % BASE);
    free(limb);
    return 0;
}
