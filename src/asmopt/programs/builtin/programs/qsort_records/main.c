/* Sorting small structs with the C library qsort and a multi-key comparator, then a
 * rank-and-group pass, like a contest scoreboard.
 * Input: n seed. Each record has a team, a score, a penalty time and a short name.
 * Output: checksum of the final order, the winners of the first teams, the score histogram. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

struct record {
    uint32_t id;
    uint16_t team;
    int16_t score;
    int32_t penalty;
    char name[8];
};

static uint64_t st;

static uint32_t rnd(void)
{
    st ^= st >> 12;
    st ^= st << 25;
    st ^= st >> 27;
    return (uint32_t)((st * 2685821657736338717ULL) >> 32);
}

static int by_rank(const void *pa, const void *pb)
{
    const struct record *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->penalty != b->penalty) return a->penalty < b->penalty ? -1 : 1;
    int c = strncmp(a->name, b->name, sizeof a->name);
    if (c) return c;
    return (a->id > b->id) - (a->id < b->id);
}

static int by_team(const void *pa, const void *pb)
{
    const struct record *a = pa, *b = pb;
    if (a->team != b->team) return a->team < b->team ? -1 : 1;
    return by_rank(pa, pb);
}

int main(void)
{
    size_t n;
    unsigned long long seed;
    if (scanf("%zu %llu", &n, &seed) != 2) {
        printf("bad input\n");
        return 0;
    }
    st = seed * 0x9E3779B97F4A7C15ULL + 1;
    struct record *r = malloc((n ? n : 1) * sizeof *r);
    if (!r) return 1;
    unsigned teams = (unsigned)(n / 50 + 1);
    for (size_t i = 0; i < n; i++) {
        r[i].id = (uint32_t)i;
        r[i].team = (uint16_t)(rnd() % teams);
        r[i].score = (int16_t)(rnd() % 1200) - 200;
        r[i].penalty = (int32_t)(rnd() % 5000);
        memset(r[i].name, 0, sizeof r[i].name);
        int len = 3 + (int)(rnd() % 5);
        for (int j = 0; j < len; j++) r[i].name[j] = (char)('a' + rnd() % 6);
    }
    qsort(r, n, sizeof *r, by_rank);
    uint64_t h = 0;
    int hist[8] = {0};
    for (size_t i = 0; i < n; i++) {
        h = h * 1000003u + r[i].id;
        hist[(r[i].score + 200) / 150]++;
    }
    printf("rank_hash %llu\n", (unsigned long long)h);
    if (n) printf("first %s %d %d last %s %d %d\n", r[0].name, r[0].score, r[0].penalty,
                  r[n - 1].name, r[n - 1].score, r[n - 1].penalty);
    qsort(r, n, sizeof *r, by_team);
    uint64_t th = 0;
    unsigned shown = 0, groups = 0;
    long long best_total = 0;
    for (size_t i = 0; i < n; i++) {
        th = th * 31 + r[i].id;
        if (i == 0 || r[i].team != r[i - 1].team) {
            groups++;
            best_total += r[i].score;
            if (shown < 5) {
                printf("team %u winner %s score %d\n", (unsigned)r[i].team, r[i].name, r[i].score);
                shown++;
            }
        }
    }
    printf("groups %u best_total %lld team_hash %llu\n", groups, best_total, (unsigned long long)th);
    printf("hist");
    for (int i = 0; i < 8; i++) printf(" %d", hist[i]);
    printf("\n");
    free(r);
    return 0;
}
