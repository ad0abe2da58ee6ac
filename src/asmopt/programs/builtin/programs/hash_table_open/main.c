/* Open-addressing hash map (linear probing, backward-shift deletion) from 64-bit keys to
 * 32-bit counters, driven by a generated stream of inserts, lookups and deletes.
 * Input: log2_capacity ops key_range seed. Output: the operation counts, the value totals
 * and a hash of the final table in slot order. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

struct entry {
    uint64_t key; /* 0 = empty; keys are stored +1 */
    uint32_t value;
};

static struct entry *tab;
static uint64_t mask;
static uint64_t used;

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

static struct entry *find_slot(uint64_t key)
{
    uint64_t i = mix(key) & mask;
    while (tab[i].key && tab[i].key != key) i = (i + 1) & mask;
    return &tab[i];
}

static void erase(uint64_t key)
{
    uint64_t i = mix(key) & mask;
    while (tab[i].key && tab[i].key != key) i = (i + 1) & mask;
    if (!tab[i].key) return;
    used--;
    /* backward shift: move later entries of the cluster into the hole when allowed */
    uint64_t hole = i;
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!tab[j].key) break;
        uint64_t home = mix(tab[j].key) & mask;
        /* entry at j may move to hole if home is not cyclically in (hole, j] */
        int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            tab[hole] = tab[j];
            hole = j;
        }
    }
    tab[hole].key = 0;
    tab[hole].value = 0;
}

int main(void)
{
    int lg;
    uint64_t ops, range;
    unsigned long long seed;
    if (scanf("%d %llu %llu %llu", &lg, (unsigned long long *)&ops, (unsigned long long *)&range,
              &seed) != 4 || lg < 1 || lg > 26 || range == 0) {
        printf("bad input\n");
        return 0;
    }
    uint64_t cap = 1ULL << lg;
    mask = cap - 1;
    tab = calloc(cap, sizeof *tab);
    if (!tab) return 1;
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 12345;
    uint64_t hits = 0, misses = 0, inserted = 0, deleted = 0, full = 0, acc = 0;
    for (uint64_t t = 0; t < ops; t++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t r = x * 0x2545F4914F6CDD1DULL;
        uint64_t key = (r >> 20) % range + 1;
        unsigned op = (unsigned)(r & 15);
        if (op < 7) { /* insert or bump */
            struct entry *e = find_slot(key);
            if (e->key) {
                e->value++;
            } else if (used + 1 < cap - cap / 8) {
                e->key = key;
                e->value = 1;
                used++;
                inserted++;
            } else {
                full++;
            }
        } else if (op < 13) { /* lookup */
            struct entry *e = find_slot(key);
            if (e->key) {
                hits++;
                acc += e->value;
            } else {
                misses++;
            }
        } else { /* delete */
            struct entry *e = find_slot(key);
            if (e->key) {
                deleted++;
                erase(key);
            }
        }
    }
    uint64_t h = 0, total = 0, maxv = 0;
    for (uint64_t i = 0; i < cap; i++) {
        if (!tab[i].key) continue;
        /* in slot order: the layout that probing and backward shifts left */
        h = h * 1000003u + mix(tab[i].key ^ ((uint64_t)tab[i].value << 40));
        total += tab[i].value;
        if (tab[i].value > maxv) maxv = tab[i].value;
    }
    printf("size %llu inserted %llu deleted %llu rejected %llu\n", (unsigned long long)used,
           (unsigned long long)inserted, (unsigned long long)deleted, (unsigned long long)full);
    printf("hits %llu misses %llu hit_value_sum %llu\n", (unsigned long long)hits,
           (unsigned long long)misses, (unsigned long long)acc);
    printf("value_total %llu max_value %llu content_hash %llu\n", (unsigned long long)total,
           (unsigned long long)maxv, (unsigned long long)h);
    free(tab);
    return 0;
}
