/* Escape-time Mandelbrot set over a rectangle of the complex plane, one jittered sample per
 * pixel (stochastic sampling: a random point of the pixel, not its centre): total
 * iterations, points inside, and totals per horizontal band; a smooth-colouring average as
 * well.
 * Input: width height max_iter x0 y0 x1 y1 seed (the jitter comes from a splitmix64 stream
 * of the 64-bit seed, two 24-bit fractions per pixel). */
#include <stdio.h>
#include <stdint.h>
#include <inttypes.h>
#include <math.h>

static uint64_t sm_state;

static uint64_t splitmix64(void)
{
    uint64_t z = (sm_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int main(void)
{
    int W, H, maxit;
    double x0, y0, x1, y1;
    uint64_t seed;
    if (scanf("%d %d %d %lf %lf %lf %lf %" SCNu64, &W, &H, &maxit, &x0, &y0, &x1, &y1, &seed) !=
            8 || W < 1 || H < 1 || maxit < 1) {
        printf("bad input\n");
        return 0;
    }
    sm_state = seed;
    const double frac = 1.0 / 16777216.0;
    long long total = 0, inside = 0;
    long long band[8] = {0};
    double smooth = 0.0;
    long long escaped = 0;
    for (int r = 0; r < H; r++) {
        for (int c = 0; c < W; c++) {
            uint64_t z = splitmix64();
            double jx = (double)(z >> 40) * frac, jy = (double)((z >> 16) & 0xFFFFFFu) * frac;
            double cr = x0 + (x1 - x0) * ((double)c + jx) / (double)W;
            double ci = y0 + (y1 - y0) * ((double)r + jy) / (double)H;
            double zr = 0.0, zi = 0.0, zr2 = 0.0, zi2 = 0.0;
            int it = 0;
            while (it < maxit && zr2 + zi2 <= 4.0) {
                zi = 2.0 * zr * zi + ci;
                zr = zr2 - zi2 + cr;
                zr2 = zr * zr;
                zi2 = zi * zi;
                it++;
            }
            total += it;
            band[(long long)r * 8 / H] += it;
            if (it == maxit) {
                inside++;
            } else {
                double mod = sqrt(zr2 + zi2);
                smooth += (double)it + 1.0 - log(log(mod)) / log(2.0);
                escaped++;
            }
        }
    }
    printf("pixels %lld total_iterations %lld inside %lld\n", (long long)W * H, total, inside);
    printf("bands");
    for (int i = 0; i < 8; i++) printf(" %lld", band[i]);
    printf("\n");
    printf("mean_smooth %.6f\n", escaped ? smooth / (double)escaped : 0.0);
    return 0;
}
