/* N! as a big integer in base 10^9 limbs (schoolbook multiply by a small factor), then its
 * digit count, digit sum, leading digits, trailing zeros and the last non-zero digits.
 * Input: N. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

#define BASE 1000000000u

int main(void)
{
    uint32_t N;
    if (scanf("%u", &N) != 1 || N > 200000) {
        printf("bad input\n");
        return 0;
    }
    size_t cap = 16 + (size_t)N; /* each factor adds less than one limb */
    uint32_t *limb = malloc(cap * sizeof *limb);
    if (!limb) return 1;
    size_t len = 1;
    limb[0] = 1;
    for (uint32_t f = 2; f <= N; f++) {
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
    printf("N %u digits %zu digit_sum %llu trailing_zeros %u\n", N, digits,
           (unsigned long long)digit_sum, trailing);
    printf("leading %u", top);
    if (len >= 2) printf("%09u", limb[len - 2]);
    printf("\n");
    /* last nine non-zero-suffix digits: drop trailing zeros, then take the low digits */
    uint32_t skip_limbs = trailing / 9, skip_digits = trailing % 9;
    uint64_t low = limb[skip_limbs];
    if (skip_limbs + 1 < len) low += (uint64_t)limb[skip_limbs + 1] * BASE;
    for (uint32_t k = 0; k < skip_digits; k++) low /= 10;
    printf("last_nonzero_digits %09llu\n", (unsigned long long)(low % BASE));
    free(limb);
    return 0;
}
