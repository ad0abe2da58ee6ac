/* Sum of gcd(a_i, a_j) and the number of coprime pairs over all ordered pairs
 * 1 <= i, j <= n of n values drawn from a seed, with Euclid's algorithm (division-heavy),
 * cross-checked with Euler's totient and the Moebius function from a sieve up to m:
 *   sum_{i,j} gcd(a_i, a_j) = sum_d phi(d) * c_d^2,  #coprime = sum_d mu(d) * c_d^2,
 * where c_d is the number of values divisible by d.
 * Input: n m seed (values a_i in [1, m], m <= 2^24, from a splitmix64 stream of the
 * 64-bit seed). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>

static uint64_t sm_state;

static uint64_t splitmix64(void)
{
    uint64_t z = (sm_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

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
    uint32_t n, m;
    uint64_t seed;
    if (scanf("%" SCNu32 " %" SCNu32 " %" SCNu64, &n, &m, &seed) != 3 || m < 1
        || m > (1u << 24) || n > 100000) {
        printf("bad input\n");
        return 0;
    }
    sm_state = seed;
    uint32_t *a = malloc(((size_t)n + 1) * sizeof *a);
    uint32_t *cnt = calloc((size_t)m + 1, sizeof *cnt);
    uint32_t *phi = malloc(((size_t)m + 1) * sizeof *phi);
    signed char *mu = malloc((size_t)m + 1);
    if (!a || !cnt || !phi || !mu) return 1;
    for (uint32_t i = 0; i < n; i++) {
        a[i] = 1 + (uint32_t)(splitmix64() % m);
        cnt[a[i]]++;
    }
    uint64_t gsum = 0, coprime = 0, lcm_mod = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = a[i];
        for (uint32_t j = 0; j < n; j++) {
            uint32_t g = gcd(x, a[j]);
            gsum += g;
            coprime += (g == 1);
            lcm_mod = (lcm_mod + (uint64_t)(x / g) * a[j]) % 1000000007u;
        }
    }
    /* totient and Moebius by a sieve over the primes up to m */
    for (uint32_t i = 0; i <= m; i++) {
        phi[i] = i;
        mu[i] = 1;
    }
    for (uint32_t p = 2; p <= m; p++) {
        if (phi[p] != p) continue;
        for (uint32_t k = p; k <= m; k += p) {
            phi[k] -= phi[k] / p;
            mu[k] = (signed char)-mu[k];
        }
        uint64_t p2 = (uint64_t)p * p;
        for (uint64_t k = p2; k <= m; k += p2) mu[k] = 0;
    }
    /* c_d: values divisible by d, by summing the counts over the multiples of d */
    uint64_t check = 0, phisum = 0;
    int64_t mobius = 0;
    uint32_t divisors_hit = 0;
    for (uint32_t d = 1; d <= m; d++) {
        uint64_t c = 0;
        for (uint32_t k = d; k <= m; k += d) c += cnt[k];
        if (c) divisors_hit++;
        check += (uint64_t)phi[d] * c * c;
        mobius += (int64_t)mu[d] * (int64_t)(c * c);
        phisum += phi[d];
    }
    printf("n %" PRIu32 " m %" PRIu32 " gcd_sum %" PRIu64 " coprime_pairs %" PRIu64 "\n", n, m,
           gsum, coprime);
    printf("lcm_sum_mod %" PRIu64 "\n", lcm_mod);
    printf("phi_check %" PRIu64 " agree %d mobius_check %" PRId64 " agree %d\n", check,
           check == gsum, mobius, mobius == (int64_t)coprime);
    printf("divisors_hit %" PRIu32 " phi_sum %" PRIu64 "\n", divisors_hit, phisum);
    free(a);
    free(cnt);
    free(phi);
    free(mu);
    return 0;
}
