/* Knuth-Morris-Pratt search of several patterns (read from stdin) in a generated text.
 * Input: n seed alphabet, then q, then q patterns, one per line.
 * The text is random over the first `alphabet` letters with the patterns' own prefixes
 * spliced in now and then, so matches and near-matches occur.
 * Output per pattern: the number of matches, the first, a hash of their positions, and the
 * longest prefix of the pattern that occurs in the text with where it first starts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#define MAXPAT 1000

static uint64_t st;

static uint32_t rnd(void)
{
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    return (uint32_t)(st >> 16);
}

static char pat[64][MAXPAT + 2];
static size_t plen[64];

int main(void)
{
    size_t n;
    unsigned long long seed;
    int alphabet, q;
    if (scanf("%zu %llu %d %d", &n, &seed, &alphabet, &q) != 4 || alphabet < 1 ||
        alphabet > 26 || q < 0 || q > 64) {
        printf("bad input\n");
        return 0;
    }
    for (int i = 0; i < q; i++) {
        if (scanf("%1000s", pat[i]) != 1) {
            printf("bad pattern\n");
            return 0;
        }
        plen[i] = strlen(pat[i]);
    }
    st = seed * 0x9E3779B97F4A7C15ULL | 1;
    char *text = malloc(n + 1);
    size_t *fail = malloc((MAXPAT + 1) * sizeof *fail);
    if (!text || !fail) return 1;
    size_t i = 0;
    while (i < n) {
        if (q > 0 && rnd() % 64 == 0) {
            int p = (int)(rnd() % (unsigned)q);
            size_t take = plen[p] ? rnd() % (plen[p] + 1) : 0;
            for (size_t k = 0; k < take && i < n; k++) text[i++] = pat[p][k];
        } else {
            text[i++] = (char)('a' + rnd() % (unsigned)alphabet);
        }
    }
    text[n] = 0;
    uint64_t total = 0;
    for (int p = 0; p < q; p++) {
        const char *P = pat[p];
        size_t m = plen[p];
        /* failure function: fail[k] = length of the longest proper border of P[0..k) */
        fail[0] = 0;
        if (m) fail[1] = 0;
        for (size_t k = 1, b = 0; k < m; k++) {
            while (b > 0 && P[k] != P[b]) b = fail[b];
            if (P[k] == P[b]) b++;
            fail[k + 1] = b;
        }
        uint64_t count = 0, pos_hash = 0;
        size_t first = (size_t)-1;
        size_t matched = 0;
        /* the longest prefix of P that occurs in the text, and where it first starts */
        size_t best = 0, best_at = 0;
        for (size_t t = 0; t < n && m > 0; t++) {
            while (matched > 0 && text[t] != P[matched]) matched = fail[matched];
            if (text[t] == P[matched]) matched++;
            if (matched > best) {
                best = matched;
                best_at = t + 1 - matched;
            }
            if (matched == m) {
                size_t at = t + 1 - m;
                if (first == (size_t)-1) first = at;
                count++;
                pos_hash = pos_hash * 1000003u + at;
                matched = fail[matched];
            }
        }
        total += count;
        printf("pattern %d length %zu matches %llu first %lld hash %llu "
               "longest_prefix %zu at %zu\n", p + 1, m, (unsigned long long)count,
               first == (size_t)-1 ? -1LL : (long long)first, (unsigned long long)pos_hash, best,
               best_at);
    }
    printf("total %llu\n", (unsigned long long)total);
    free(text);
    free(fail);
    return 0;
}
