/* Word frequencies of a text read from stdin: tokenise (letters and apostrophes, case
 * folded), count in an open-addressing hash table keyed by a salted FNV-1a hash, and list
 * the most frequent words. The count is repeated for `rounds` salts (the table is rebuilt
 * each time), each salt drawn from a splitmix64 stream of the 64-bit seed; the counts must
 * not depend on the salt, the probe statistics (total probes, and a checksum of the slot
 * each new word takes in every round) do.
 * Input: first line rounds seed, then the text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <inttypes.h>

#define MAXTEXT (1 << 20)
#define TABLE (1 << 16)

struct slot {
    uint32_t hash;
    uint32_t start;
    uint32_t len;
    uint32_t count;
};

static char text[MAXTEXT + 1];
static struct slot table[TABLE];

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int is_word_char(int c)
{
    return (c >= 'a' && c <= 'z') || c == '\'';
}

static int word_cmp(uint32_t a, uint32_t alen, uint32_t b, uint32_t blen)
{
    uint32_t m = alen < blen ? alen : blen;
    int c = memcmp(text + a, text + b, m);
    if (c) return c;
    return (alen > blen) - (alen < blen);
}

int main(void)
{
    int rounds;
    uint64_t seed;
    if (scanf("%d %" SCNu64, &rounds, &seed) != 2 || rounds < 1) {
        printf("bad input\n");
        return 0;
    }
    size_t n = fread(text, 1, MAXTEXT, stdin);
    text[n] = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (c >= 'A' && c <= 'Z') text[i] = (char)(c - 'A' + 'a');
    }
    uint32_t distinct = 0, words = 0;
    uint64_t probes_total = 0, layout = 14695981039346656037ULL, stream = seed;
    for (int r = 0; r < rounds; r++) {
        uint32_t salt = (uint32_t)(splitmix64(&stream) >> 32);
        memset(table, 0, sizeof table);
        distinct = 0;
        words = 0;
        uint64_t probes = 0;
        size_t i = 0;
        while (i < n) {
            while (i < n && !is_word_char((unsigned char)text[i])) i++;
            if (i >= n) break;
            size_t start = i;
            uint32_t h = salt;
            while (i < n && is_word_char((unsigned char)text[i])) {
                h ^= (unsigned char)text[i];
                h *= 16777619u;
                i++;
            }
            uint32_t len = (uint32_t)(i - start);
            h |= 1u; /* zero marks an empty slot */
            uint32_t pos = (h ^ (h >> 15)) & (TABLE - 1);
            for (;;) {
                probes++;
                struct slot *sl = &table[pos];
                if (sl->hash == 0) {
                    if (distinct >= TABLE - 1) {
                        printf("table full\n");
                        return 0;
                    }
                    sl->hash = h;
                    sl->start = (uint32_t)start;
                    sl->len = len;
                    sl->count = 1;
                    distinct++;
                    layout = (layout ^ pos) * 1099511628211ULL;
                    break;
                }
                if (sl->hash == h && sl->len == len && memcmp(text + sl->start, text + start, len) == 0) {
                    sl->count++;
                    break;
                }
                pos = (pos + 1) & (TABLE - 1);
            }
            words++;
        }
        probes_total += probes;
    }
    /* top 10 by count, ties broken alphabetically (selection over the table) */
    printf("words %u distinct %u\n", words, distinct);
    printf("probes_per_word %.3f probes %" PRIu64 " layout %016" PRIx64 "\n",
           words ? (double)probes_total / ((double)words * rounds) : 0.0, probes_total, layout);
    unsigned char *taken = calloc(TABLE, 1);
    if (!taken) return 1;
    for (int k = 0; k < 10 && (uint32_t)k < distinct; k++) {
        int best = -1;
        for (int p = 0; p < TABLE; p++) {
            if (!table[p].hash || taken[p]) continue;
            if (best < 0 || table[p].count > table[best].count ||
                (table[p].count == table[best].count &&
                 word_cmp(table[p].start, table[p].len, table[best].start, table[best].len) < 0))
                best = p;
        }
        taken[best] = 1;
        printf("%u %.*s\n", table[best].count, (int)table[best].len, text + table[best].start);
    }
    uint32_t singletons = 0, longest = 0;
    for (int p = 0; p < TABLE; p++) {
        if (!table[p].hash) continue;
        if (table[p].count == 1) singletons++;
        if (table[p].len > longest) longest = table[p].len;
    }
    printf("singletons %u longest %u\n", singletons, longest);
    free(taken);
    return 0;
}
