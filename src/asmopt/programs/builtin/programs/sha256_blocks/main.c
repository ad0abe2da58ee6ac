/* SHA-256 (FIPS 180-4) written out in full: digest of a message given on stdin, digest of a
 * generated buffer, and a hash chain (each digest hashed again).
 * Input: line 1 "n chain seed", line 2 the message (may be empty). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u};

struct sha256 {
    uint32_t h[8];
    unsigned char block[64];
    size_t fill;
    uint64_t length;
};

static uint32_t rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t *h, const unsigned char *p)
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = k + S1 + ch + K[t] + w[t];
        uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

static void sha_init(struct sha256 *s)
{
    static const uint32_t iv[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                   0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    memcpy(s->h, iv, sizeof iv);
    s->fill = 0;
    s->length = 0;
}

static void sha_update(struct sha256 *s, const unsigned char *p, size_t n)
{
    s->length += n;
    while (n) {
        if (s->fill == 0 && n >= 64) {
            compress(s->h, p);
            p += 64;
            n -= 64;
            continue;
        }
        size_t take = 64 - s->fill < n ? 64 - s->fill : n;
        memcpy(s->block + s->fill, p, take);
        s->fill += take;
        p += take;
        n -= take;
        if (s->fill == 64) {
            compress(s->h, s->block);
            s->fill = 0;
        }
    }
}

static void sha_final(struct sha256 *s, unsigned char out[32])
{
    uint64_t bits = s->length * 8;
    unsigned char pad = 0x80;
    uint64_t keep = s->length;
    sha_update(s, &pad, 1);
    unsigned char zero = 0;
    while (s->fill != 56) sha_update(s, &zero, 1);
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha_update(s, len, 8);
    s->length = keep;
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)s->h[i];
    }
}

static void print_digest(const char *label, const unsigned char d[32])
{
    printf("%s ", label);
    for (int i = 0; i < 32; i++) printf("%02x", d[i]);
    printf("\n");
}

int main(void)
{
    size_t n;
    unsigned chain;
    unsigned long long seed;
    if (scanf("%zu %u %llu", &n, &chain, &seed) != 3) {
        printf("bad input\n");
        return 0;
    }
    int c = getchar();
    while (c == ' ' || c == '\r') c = getchar();
    static char msg[4096];
    size_t mlen = 0;
    if (c == '\n') {
        while ((c = getchar()) != EOF && c != '\n' && mlen < sizeof msg) msg[mlen++] = (char)c;
    }
    struct sha256 s;
    unsigned char d[32];
    sha_init(&s);
    sha_update(&s, (const unsigned char *)msg, mlen);
    sha_final(&s, d);
    print_digest("message", d);

    unsigned char *buf = malloc(n ? n : 1);
    if (!buf) return 1;
    uint64_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        buf[i] = (unsigned char)(x >> 56);
    }
    sha_init(&s);
    /* feed in uneven pieces to exercise the buffering */
    size_t pos = 0, piece = 1;
    while (pos < n) {
        size_t take = piece < n - pos ? piece : n - pos;
        sha_update(&s, buf + pos, take);
        pos += take;
        piece = piece * 3 % 1021 + 1;
    }
    sha_final(&s, d);
    print_digest("buffer", d);
    for (unsigned i = 0; i < chain; i++) {
        sha_init(&s);
        sha_update(&s, d, 32);
        sha_final(&s, d);
    }
    print_digest("chain", d);
    free(buf);
    return 0;
}
