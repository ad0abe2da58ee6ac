/* Sum of gcd(i, j) and the number of coprime pairs over 1 <= i, j <= n with Euclid's
 * algorithm (division-heavy), cross-checked with Euler's totient from a sieve.
 * Input: n. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static uint32_t gcd(uint32_t a, uint32_t b)
{
    while (b) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int main(void)
{
    uint32_t n;
    if (scanf("%u", &n) != 1) {
        printf("bad input\n");
        return 0;
    }
    uint64_t gsum = 0, coprime = 0, lcm_mod = 0;
    for (uint32_t i = 1; i <= n; i++) {
        for (uint32_t j = 1; j <= n; j++) {
            uint32_t g = gcd(i, j);
            gsum += g;
            coprime += (g == 1);
            lcm_mod = (lcm_mod + (uint64_t)(i / g) * j) % 1000000007u;
        }
    }
    /* check: sum_{i,j} gcd(i,j) = sum_d phi(d) * floor(n/d)^2 */
    uint32_t *phi = malloc(((size_t)n + 1) * sizeof *phi);
    if (!phi) return 1;
    for (uint32_t i = 0; i <= n; i++) phi[i] = i;
    for (uint32_t p = 2; p <= n; p++) {
        if (phi[p] != p) continue;
        for (uint32_t k = p; k <= n; k += p) phi[k] -= phi[k] / p;
    }
    uint64_t check = 0, phisum = 0;
    for (uint32_t d = 1; d <= n; d++) {
        uint64_t q = n / d;
        check += (uint64_t)phi[d] * q * q;
        phisum += phi[d];
    }
    printf("n %u gcd_sum %llu coprime_pairs %llu\n", n, (unsigned long long)gsum,
           (unsigned long long)coprime);
    printf("lcm_sum_mod %llu\n", (unsigned long long)lcm_mod);
    printf("phi_check %llu agree %d phi_sum %llu\n", (unsigned long long)check, check == gsum,
           (unsigned long long)phisum);
    free(phi);
    return 0;
}
