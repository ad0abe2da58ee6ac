/* Sieve of Eratosthenes over odd numbers (one byte per odd number), then prime statistics:
 * count, sum, twin pairs, largest gap, and primes in each tenth of the range.
 * Input: N. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

int main(void)
{
    uint64_t N;
    if (scanf("%llu", (unsigned long long *)&N) != 1) {
        printf("bad input\n");
        return 0;
    }
    /* index i stands for the odd number 2i+1 */
    uint64_t half = N / 2 + 1;
    unsigned char *composite = malloc(half);
    if (!composite) return 1;
    memset(composite, 0, half);
    for (uint64_t i = 1; (2 * i + 1) * (2 * i + 1) <= N; i++) {
        if (composite[i]) continue;
        uint64_t p = 2 * i + 1;
        for (uint64_t j = (p * p) / 2; j < half; j += p) composite[j] = 1;
    }
    uint64_t count = 0, sum = 0, twins = 0, gap = 0, gap_at = 0, prev = 0;
    uint64_t tenth[10] = {0};
    uint64_t step = N / 10 + 1;
    if (N >= 2) {
        count = 1;
        sum = 2;
        prev = 2;
        tenth[2 / step]++;
    }
    for (uint64_t i = 1; i < half; i++) {
        uint64_t v = 2 * i + 1;
        if (v > N) break;
        if (composite[i]) continue;
        count++;
        sum += v;
        tenth[v / step]++;
        if (v - prev == 2) twins++;
        if (v - prev > gap) {
            gap = v - prev;
            gap_at = prev;
        }
        prev = v;
    }
    printf("N %llu primes %llu sum %llu\n", (unsigned long long)N, (unsigned long long)count,
           (unsigned long long)sum);
    printf("twins %llu largest_gap %llu after %llu\n", (unsigned long long)twins,
           (unsigned long long)gap, (unsigned long long)gap_at);
    printf("largest %llu\n", (unsigned long long)prev);
    printf("tenths");
    for (int i = 0; i < 10; i++) printf(" %llu", (unsigned long long)tenth[i]);
    printf("\n");
    free(composite);
    return 0;
}
