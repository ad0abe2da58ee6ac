/* Deterministic Miller-Rabin for 32-bit numbers (bases 2, 7, 61) with 64-bit modular
 * multiplication, applied to an arithmetic progression lo, lo + step, lo + 2 step, ...
 * (modulo 2^32) and to a pseudo-random sample.
 * Input: lo count step seed samples. Output: prime counts, sums and the last and largest
 * primes found. */
#include <stdio.h>
#include <stdint.h>

static uint64_t mulmod(uint64_t a, uint64_t b, uint64_t m)
{
    return a * b % m;
}

static uint64_t powmod(uint64_t a, uint64_t e, uint64_t m)
{
    uint64_t r = 1;
    a %= m;
    while (e) {
        if (e & 1) r = mulmod(r, a, m);
        a = mulmod(a, a, m);
        e >>= 1;
    }
    return r;
}

static int is_prime(uint32_t n)
{
    if (n < 2) return 0;
    static const uint32_t small[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
    for (int i = 0; i < 12; i++) {
        if (n == small[i]) return 1;
        if (n % small[i] == 0) return 0;
    }
    uint32_t d = n - 1;
    int r = 0;
    while ((d & 1) == 0) {
        d >>= 1;
        r++;
    }
    static const uint32_t bases[] = {2, 7, 61};
    for (int i = 0; i < 3; i++) {
        uint64_t x = powmod(bases[i], d, n);
        if (x == 1 || x == n - 1) continue;
        int comp = 1;
        for (int k = 1; k < r; k++) {
            x = mulmod(x, x, n);
            if (x == n - 1) {
                comp = 0;
                break;
            }
        }
        if (comp) return 0;
    }
    return 1;
}

int main(void)
{
    uint32_t lo, count, step, samples;
    unsigned long long seed;
    if (scanf("%u %u %u %llu %u", &lo, &count, &step, &seed, &samples) != 5) {
        printf("bad input\n");
        return 0;
    }
    uint64_t primes = 0, sum = 0;
    uint32_t last = 0;
    uint32_t term = lo;
    for (uint32_t k = 0; k < count; k++, term += step) {
        if (is_prime(term)) {
            primes++;
            sum += term;
            last = term;
        }
    }
    printf("progression %u +%u step %u primes %llu sum %llu last %u\n", lo, count, step,
           (unsigned long long)primes, (unsigned long long)sum, last);
    uint64_t x = seed | 1;
    uint64_t sp = 0, hash = 0;
    uint32_t biggest = 0;
    for (uint32_t i = 0; i < samples; i++) {
        x ^= x << 7;
        x ^= x >> 9;
        uint32_t v = (uint32_t)(x >> 11) | 1u;
        if (is_prime(v)) {
            sp++;
            hash = hash * 31 + v;
            if (v > biggest) biggest = v;
        }
    }
    printf("samples %u primes %llu biggest %u hash %llu\n", samples, (unsigned long long)sp,
           biggest, (unsigned long long)hash);
    return 0;
}
