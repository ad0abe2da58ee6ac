/* Longest common subsequence of two strings read from stdin (one per line), with a
 * two-row dynamic programme. Also reports the LCS of A's every 1/8 prefix with B, the sum
 * of the table's last column and a profile hash of its borders: the last column (each
 * prefix of A against B) and the last row (A against each prefix of B).
 * Input: line 1 string A, line 2 string B (letters, up to 20000 characters each). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#define MAXLEN 20005

static char a[MAXLEN], b[MAXLEN];

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

int main(void)
{
    size_t n = read_line(a);
    size_t m = read_line(b);
    unsigned *prev = calloc(m + 1, sizeof *prev);
    unsigned *cur = calloc(m + 1, sizeof *cur);
    if (!prev || !cur) return 1;
    unsigned long long rowsum = 0;
    uint64_t col = 14695981039346656037ULL, row = 1469598103934665603ULL;
    for (size_t i = 1; i <= n; i++) {
        char ca = a[i - 1];
        cur[0] = 0;
        for (size_t j = 1; j <= m; j++) {
            unsigned v;
            if (ca == b[j - 1]) {
                v = prev[j - 1] + 1;
            } else {
                v = prev[j] > cur[j - 1] ? prev[j] : cur[j - 1];
            }
            cur[j] = v;
        }
        rowsum += cur[m];
        col = (col ^ cur[m]) * 1099511628211ULL;
        if (n >= 8 && i % (n / 8) == 0 && i / (n / 8) <= 8)
            printf("prefix %zu lcs %u\n", i, cur[m]);
        unsigned *t = prev;
        prev = cur;
        cur = t;
    }
    printf("lengths %zu %zu\n", n, m);
    printf("lcs %u\n", prev[m]);
    printf("rowsum %llu\n", rowsum);
    for (size_t j = 0; j <= m; j++) row = (row ^ prev[j]) * 1099511628211ULL;
    printf("profile %016llx\n", (unsigned long long)(col ^ (row * 31)));
    free(prev);
    free(cur);
    return 0;
}
