/* Suffix array by prefix doubling with two counting-sort passes per round, then the LCP
 * array by Kasai's algorithm. Reports distinct substrings, the longest repeat and checksums.
 * Input: n seed alphabet (a generated string with some repeated blocks, drawn by PCG32
 * with its 64-bit state started from the 64-bit seed). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>
#include <string.h>

static uint64_t s;

static uint32_t rnd(void)
{
    uint64_t old = s;
    s = old * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rot = (uint32_t)(old >> 59);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

int main(void)
{
    int n, alphabet;
    uint64_t seed;
    if (scanf("%d %" SCNu64 " %d", &n, &seed, &alphabet) != 3 || n < 0 || alphabet < 1 || alphabet > 26) {
        printf("bad input\n");
        return 0;
    }
    s = seed + 1442695040888963407ULL;
    rnd();
    size_t cap = (size_t)n + 1;
    unsigned char *str = malloc(cap);
    int *sa = malloc(cap * sizeof *sa), *rank = malloc(cap * sizeof *rank);
    int *tmp = malloc(cap * sizeof *tmp), *sa2 = malloc(cap * sizeof *sa2);
    int *lcp = malloc(cap * sizeof *lcp);
    int cnt_cap = (n > 256 ? n : 256) + 2;
    int *cnt = malloc((size_t)cnt_cap * sizeof *cnt);
    if (!str || !sa || !rank || !tmp || !sa2 || !lcp || !cnt) return 1;
    for (int i = 0; i < n; i++) {
        if (i >= 50 && rnd() % 200 == 0) {
            /* copy an earlier block to create long repeats */
            int len = 5 + (int)(rnd() % 40);
            int from = (int)(rnd() % (unsigned)(i - 40));
            for (int k = 0; k < len && i < n; k++, i++) str[i] = str[from + k];
            i--;
        } else {
            str[i] = (unsigned char)('a' + rnd() % (unsigned)alphabet);
        }
    }
    /* initial ranks: characters */
    int classes = 256;
    memset(cnt, 0, (size_t)cnt_cap * sizeof *cnt);
    for (int i = 0; i < n; i++) cnt[str[i]]++;
    for (int c = 1; c < 256; c++) cnt[c] += cnt[c - 1];
    for (int i = n - 1; i >= 0; i--) sa[--cnt[str[i]]] = i;
    for (int i = 0; i < n; i++) rank[i] = str[i];
    int rounds = 0;
    for (int k = 1; n > 0; k <<= 1) {
        rounds++;
        /* sort by second key: suffixes without a second half come first */
        int p = 0;
        for (int i = n - k; i < n; i++)
            if (i >= 0) sa2[p++] = i;
        for (int i = 0; i < n; i++)
            if (sa[i] >= k) sa2[p++] = sa[i] - k;
        /* stable counting sort by first key */
        memset(cnt, 0, (size_t)(classes + 1) * sizeof *cnt);
        for (int i = 0; i < n; i++) cnt[rank[i]]++;
        for (int c = 1; c <= classes; c++) cnt[c] += cnt[c - 1];
        for (int i = n - 1; i >= 0; i--) sa[--cnt[rank[sa2[i]]]] = sa2[i];
        tmp[sa[0]] = 0;
        int r = 0;
        for (int i = 1; i < n; i++) {
            int a = sa[i - 1], b = sa[i];
            int ra2 = a + k < n ? rank[a + k] : -1;
            int rb2 = b + k < n ? rank[b + k] : -1;
            if (rank[a] != rank[b] || ra2 != rb2) r++;
            tmp[b] = r;
        }
        memcpy(rank, tmp, (size_t)n * sizeof *rank);
        classes = r + 1;
        if (classes == n || k >= n) break;
    }
    /* Kasai: rank[] now holds the position of each suffix in sa */
    long long lcp_sum = 0;
    int best = 0, best_at = 0;
    int h = 0;
    for (int i = 0; i < n; i++) {
        if (rank[i] == 0) {
            h = 0;
            lcp[0] = 0;
            continue;
        }
        int j = sa[rank[i] - 1];
        while (i + h < n && j + h < n && str[i + h] == str[j + h]) h++;
        lcp[rank[i]] = h;
        lcp_sum += h;
        if (h > best) {
            best = h;
            best_at = i;
        }
        if (h > 0) h--;
    }
    uint64_t hash = 0;
    for (int i = 0; i < n; i++) hash = hash * 1000003u + (uint32_t)sa[i] * 7u + (uint32_t)lcp[i];
    long long total = (long long)n * (n + 1) / 2;
    printf("n %d rounds %d\n", n, rounds);
    printf("distinct_substrings %lld\n", total - lcp_sum);
    printf("longest_repeat %d at %d\n", best, best_at);
    if (n) printf("first_suffix %d last_suffix %d\n", sa[0], sa[n - 1]);
    printf("hash %llu\n", (unsigned long long)hash);
    free(str); free(sa); free(rank); free(tmp); free(sa2); free(lcp); free(cnt);
    return 0;
}
