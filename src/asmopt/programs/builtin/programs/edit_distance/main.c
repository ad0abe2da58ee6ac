/* Levenshtein distance for pairs of strings read from stdin, two-row DP with unit costs,
 * plus a check of whether the distance is within 10% of the longer length, and a profile
 * hash of the table's borders: the last row (the distance from A to every prefix of B)
 * and the last column (from every prefix of A to B).
 * Input: q, then q pairs of lines. Output: one line per pair and a total. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#define MAXLEN 12005

static char sa[MAXLEN], sb[MAXLEN];
static int row0[MAXLEN], row1[MAXLEN];

static size_t read_line(char *buf)
{
    if (!fgets(buf, MAXLEN, stdin)) {
        buf[0] = 0;
        return 0;
    }
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = 0;
    return n;
}

static uint64_t fold(uint64_t h, int x)
{
    return (h ^ (uint64_t)(unsigned)x) * 1099511628211ULL;
}

static int levenshtein(const char *a, size_t n, const char *b, size_t m, uint64_t *profile)
{
    int *prev = row0, *cur = row1;
    uint64_t col = 14695981039346656037ULL, row = 1469598103934665603ULL;
    for (size_t j = 0; j <= m; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = (int)i;
        char ca = a[i - 1];
        for (size_t j = 1; j <= m; j++) {
            int best = prev[j - 1] + (ca != b[j - 1]);
            int del = prev[j] + 1;
            int ins = cur[j - 1] + 1;
            if (del < best) best = del;
            if (ins < best) best = ins;
            cur[j] = best;
        }
        col = fold(col, cur[m]);
        int *t = prev;
        prev = cur;
        cur = t;
    }
    for (size_t j = 0; j <= m; j++) row = fold(row, prev[j]);
    *profile = col ^ (row * 31);
    return prev[m];
}

int main(void)
{
    int q;
    if (scanf("%d", &q) != 1 || q < 0) {
        printf("bad input\n");
        return 0;
    }
    int c;
    while ((c = getchar()) != '\n' && c != EOF) {
    }
    long long total = 0;
    int close = 0;
    for (int k = 0; k < q; k++) {
        size_t n = read_line(sa);
        size_t m = read_line(sb);
        uint64_t profile;
        int d = levenshtein(sa, n, sb, m, &profile);
        size_t longer = n > m ? n : m;
        int is_close = (size_t)d * 10 <= longer;
        close += is_close;
        total += d;
        printf("pair %d lengths %zu %zu distance %d profile %016llx%s\n", k + 1, n, m, d,
               (unsigned long long)profile, is_close ? " close" : "");
    }
    printf("total %lld close %d\n", total, close);
    return 0;
}
