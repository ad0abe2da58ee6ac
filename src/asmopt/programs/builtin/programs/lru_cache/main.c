/* LRU cache simulation: a doubly linked recency list of nodes plus a chained hash table of
 * node pointers, replaying a skewed access trace (hot set plus scans).
 * Input: capacity requests key_space seed. Output: hits, misses, evictions, final order. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

struct node {
    uint32_t key;
    uint32_t value;
    struct node *prev, *next; /* recency list, most recent at head */
    struct node *chain;       /* hash bucket chain */
};

static struct node **bucket;
static uint32_t nbuckets;
static struct node head; /* sentinel: head.next is most recent, head.prev least recent */

static uint32_t hash_key(uint32_t k)
{
    k ^= k >> 16;
    k *= 0x45d9f3bu;
    k ^= k >> 16;
    return k & (nbuckets - 1);
}

static void unlink_node(struct node *x)
{
    x->prev->next = x->next;
    x->next->prev = x->prev;
}

static void push_front(struct node *x)
{
    x->next = head.next;
    x->prev = &head;
    head.next->prev = x;
    head.next = x;
}

static struct node *lookup(uint32_t key)
{
    for (struct node *p = bucket[hash_key(key)]; p; p = p->chain)
        if (p->key == key) return p;
    return NULL;
}

static void bucket_remove(struct node *x)
{
    struct node **pp = &bucket[hash_key(x->key)];
    while (*pp != x) pp = &(*pp)->chain;
    *pp = x->chain;
}

int main(void)
{
    uint32_t capacity, requests, space;
    unsigned long long seed;
    if (scanf("%u %u %u %llu", &capacity, &requests, &space, &seed) != 4 || capacity == 0 ||
        space == 0) {
        printf("bad input\n");
        return 0;
    }
    nbuckets = 1;
    while (nbuckets < capacity) nbuckets <<= 1;
    bucket = calloc(nbuckets, sizeof *bucket);
    struct node *pool = malloc((size_t)capacity * sizeof *pool);
    if (!bucket || !pool) return 1;
    head.next = head.prev = &head;
    uint32_t used = 0;
    uint64_t hits = 0, misses = 0, evictions = 0, value_sum = 0;
    uint64_t x = seed ^ 0x243F6A8885A308D3ULL;
    uint32_t scan = 0;
    for (uint32_t t = 0; t < requests; t++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t r = x * 0x2545F4914F6CDD1DULL;
        uint32_t key;
        uint32_t kind = (uint32_t)(r >> 60);
        if (kind < 10) key = (uint32_t)((r >> 20) % (space / 16 + 1));        /* hot set */
        else if (kind < 14) key = (uint32_t)((r >> 20) % space);              /* uniform */
        else key = scan++ % space;                                           /* sequential scan */
        struct node *nd = lookup(key);
        if (nd) {
            hits++;
            value_sum += nd->value;
            nd->value++;
            unlink_node(nd);
            push_front(nd);
            continue;
        }
        misses++;
        if (used < capacity) {
            nd = &pool[used++];
        } else {
            nd = head.prev; /* least recently used */
            unlink_node(nd);
            bucket_remove(nd);
            evictions++;
        }
        nd->key = key;
        nd->value = key % 97;
        uint32_t b = hash_key(key);
        nd->chain = bucket[b];
        bucket[b] = nd;
        push_front(nd);
    }
    uint64_t order = 0;
    uint32_t shown = 0;
    printf("capacity %u requests %u\n", capacity, requests);
    printf("hits %llu misses %llu evictions %llu value_sum %llu\n", (unsigned long long)hits,
           (unsigned long long)misses, (unsigned long long)evictions, (unsigned long long)value_sum);
    printf("most_recent");
    for (struct node *p = head.next; p != &head; p = p->next) {
        order = order * 1000003u + p->key;
        if (shown < 8) {
            printf(" %u", p->key);
            shown++;
        }
    }
    printf("\norder_hash %llu\n", (unsigned long long)order);
    free(bucket);
    free(pool);
    return 0;
}
