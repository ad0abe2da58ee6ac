/* Manacher's algorithm on a generated string with planted palindromes: the longest
 * palindromic substring, the number of palindromic substrings, and the longest even one.
 * Input: n seed alphabet. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static uint64_t st;

static uint32_t rnd(void)
{
    uint64_t z = (st += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return (uint32_t)(z >> 32);
}

int main(void)
{
    int n, alphabet;
    unsigned long long seed;
    if (scanf("%d %llu %d", &n, &seed, &alphabet) != 3 || n < 0 || alphabet < 1 || alphabet > 26) {
        printf("bad input\n");
        return 0;
    }
    st = seed;
    char *s = malloc((size_t)n + 1);
    int *d1 = malloc(((size_t)n + 1) * sizeof *d1); /* odd radius (count of centres incl. self) */
    int *d2 = malloc(((size_t)n + 1) * sizeof *d2); /* even radius */
    if (!s || !d1 || !d2) return 1;
    int i = 0;
    while (i < n) {
        if (i > 10 && rnd() % 100 == 0) {
            /* mirror the previous characters to plant a palindrome */
            int len = 1 + (int)(rnd() % 200);
            int c = i;
            for (int k = 1; k <= len && i < n && c - k >= 0; k++) s[i++] = s[c - k];
        } else {
            s[i++] = (char)('a' + rnd() % (unsigned)alphabet);
        }
    }
    s[n] = 0;
    for (int k = 0, l = 0, r = -1; k < n; k++) {
        int rad = k > r ? 1 : (d1[l + r - k] < r - k + 1 ? d1[l + r - k] : r - k + 1);
        while (k - rad >= 0 && k + rad < n && s[k - rad] == s[k + rad]) rad++;
        d1[k] = rad;
        if (k + rad - 1 > r) {
            l = k - rad + 1;
            r = k + rad - 1;
        }
    }
    for (int k = 0, l = 0, r = -1; k < n; k++) {
        int rad = k > r ? 0 : (d2[l + r - k + 1] < r - k + 1 ? d2[l + r - k + 1] : r - k + 1);
        while (k - rad - 1 >= 0 && k + rad < n && s[k - rad - 1] == s[k + rad]) rad++;
        d2[k] = rad;
        if (k + rad - 1 > r) {
            l = k - rad;
            r = k + rad - 1;
        }
    }
    uint64_t count = 0;
    int best_len = 0, best_at = 0, best_even = 0;
    uint64_t h = 0;
    for (int k = 0; k < n; k++) {
        count += (uint64_t)d1[k] + (uint64_t)d2[k];
        if (2 * d1[k] - 1 > best_len) {
            best_len = 2 * d1[k] - 1;
            best_at = k - d1[k] + 1;
        }
        if (2 * d2[k] > best_len) {
            best_len = 2 * d2[k];
            best_at = k - d2[k];
        }
        if (2 * d2[k] > best_even) best_even = 2 * d2[k];
        h = h * 131 + (uint64_t)(d1[k] * 2 + d2[k]);
    }
    printf("n %d palindromic_substrings %llu\n", n, (unsigned long long)count);
    printf("longest %d at %d longest_even %d\n", best_len, best_at, best_even);
    if (best_len > 0) {
        int show = best_len < 40 ? best_len : 40;
        printf("prefix %.*s\n", show, s + best_at);
    }
    printf("radius_hash %llu\n", (unsigned long long)h);
    free(s);
    free(d1);
    free(d2);
    return 0;
}
