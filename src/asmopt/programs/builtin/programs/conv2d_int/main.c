/* Image filtering on an 8-bit greyscale image: a 5x5 integer Gaussian blur, a 3x3 sharpen
 * with saturation to 0..255, and a Sobel edge magnitude, with clamped borders; repeated for
 * several passes. Output: histogram summary and checksums of the image and its edge map.
 * Input: H W passes seed (the noise comes from a 64-bit xorshift generator started from the
 * 64-bit seed). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

int main(void)
{
    int H, W, passes;
    uint64_t seed;
    if (scanf("%d %d %d %" SCNu64, &H, &W, &passes, &seed) != 4 || H < 1 || W < 1 || passes < 0) {
        printf("bad input\n");
        return 0;
    }
    size_t N = (size_t)H * (size_t)W;
    uint8_t *img = malloc(N), *tmp = malloc(N), *edge = malloc(N);
    if (!img || !tmp || !edge) return 1;
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
    if (s == 0) s = 1;
    for (int r = 0; r < H; r++) {
        for (int c = 0; c < W; c++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            /* smooth gradient plus blobs plus noise */
            int v = (r * 7 + c * 3) % 256;
            if (((r / 16) + (c / 16)) % 3 == 0) v = 255 - v;
            v += (int)(s % 41) - 20;
            img[(size_t)r * W + c] = (uint8_t)clampi(v, 0, 255);
        }
    }
    static const int g5[5] = {1, 4, 6, 4, 1};
    for (int p = 0; p < passes; p++) {
        /* 5x5 separable-weight Gaussian, computed directly (256 = total weight) */
        for (int r = 0; r < H; r++) {
            for (int c = 0; c < W; c++) {
                int acc = 0;
                for (int dr = -2; dr <= 2; dr++) {
                    const uint8_t *row = img + (size_t)clampi(r + dr, 0, H - 1) * W;
                    int racc = 0;
                    for (int dc = -2; dc <= 2; dc++) racc += g5[dc + 2] * row[clampi(c + dc, 0, W - 1)];
                    acc += g5[dr + 2] * racc;
                }
                tmp[(size_t)r * W + c] = (uint8_t)((acc + 128) >> 8);
            }
        }
        /* 3x3 sharpen: 5*centre - 4-neighbours, saturated */
        for (int r = 0; r < H; r++) {
            const uint8_t *up = tmp + (size_t)clampi(r - 1, 0, H - 1) * W;
            const uint8_t *mid = tmp + (size_t)r * W;
            const uint8_t *dn = tmp + (size_t)clampi(r + 1, 0, H - 1) * W;
            for (int c = 0; c < W; c++) {
                int l = mid[clampi(c - 1, 0, W - 1)], rr = mid[clampi(c + 1, 0, W - 1)];
                int v = 5 * mid[c] - up[c] - dn[c] - l - rr;
                img[(size_t)r * W + c] = (uint8_t)clampi(v, 0, 255);
            }
        }
    }
    /* Sobel magnitude (|gx| + |gy|) / 8 */
    for (int r = 0; r < H; r++) {
        for (int c = 0; c < W; c++) {
            int v[3][3];
            for (int dr = -1; dr <= 1; dr++)
                for (int dc = -1; dc <= 1; dc++)
                    v[dr + 1][dc + 1] = img[(size_t)clampi(r + dr, 0, H - 1) * W + clampi(c + dc, 0, W - 1)];
            int gx = (v[0][2] + 2 * v[1][2] + v[2][2]) - (v[0][0] + 2 * v[1][0] + v[2][0]);
            int gy = (v[2][0] + 2 * v[2][1] + v[2][2]) - (v[0][0] + 2 * v[0][1] + v[0][2]);
            int m = (abs(gx) + abs(gy)) / 8;
            edge[(size_t)r * W + c] = (uint8_t)(m > 255 ? 255 : m);
        }
    }
    uint32_t hist[8] = {0};
    uint64_t sum = 0, esum = 0;
    uint32_t h = 2166136261u, eh = 2166136261u;
    for (size_t i = 0; i < N; i++) {
        hist[img[i] >> 5]++;
        sum += img[i];
        esum += edge[i];
        h = (h ^ img[i]) * 16777619u;
        eh = (eh ^ edge[i]) * 16777619u;
    }
    printf("pixels %zu mean_x1000 %llu edge_mean_x1000 %llu\n", N,
           (unsigned long long)(sum * 1000 / N), (unsigned long long)(esum * 1000 / N));
    printf("hist");
    for (int i = 0; i < 8; i++) printf(" %u", hist[i]);
    printf("\nhash %08x edge_hash %08x\n", h, eh);
    free(img);
    free(tmp);
    free(edge);
    return 0;
}
