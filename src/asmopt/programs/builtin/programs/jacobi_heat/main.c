/* Heat on a square plate by Jacobi iteration (5-point stencil, two buffers) from a random
 * initial temperature, with fixed edges (hot top, sine-profile left, cold right and bottom,
 * each with random noise) and a heat source; reports temperatures and the residual.
 * Input: n iterations source_strength seed (the initial interior in [0, 1) and the edge
 * noise in [0, 10) come from a splitmix64 stream of the 64-bit seed). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>
#include <math.h>

static uint64_t sm_state;

static double rnd_unit(void)
{
    uint64_t z = (sm_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

int main(void)
{
    int n, iters;
    double strength;
    uint64_t seed;
    if (scanf("%d %d %lf %" SCNu64, &n, &iters, &strength, &seed) != 4 || n < 3 || iters < 0) {
        printf("bad input\n");
        return 0;
    }
    sm_state = seed;
    size_t N = (size_t)n * (size_t)n;
    double *u = calloc(N, sizeof *u), *v = calloc(N, sizeof *v), *f = calloc(N, sizeof *f);
    if (!u || !v || !f) return 1;
    /* boundary: top edge 100, left edge 50 * sin profile, others 0, plus noise; the
     * interior starts random */
    for (int i = 0; i < n; i++) {
        double left = i == 0 ? 100.0 : 50.0 * sin(3.141592653589793 * (double)i / (double)(n - 1));
        for (int j = 0; j < n; j++) {
            size_t k = (size_t)i * n + j;
            if (i == 0 || i == n - 1 || j == 0 || j == n - 1) {
                double base = i == 0 ? 100.0 : j == 0 ? left : 0.0;
                u[k] = v[k] = base + 10.0 * rnd_unit();
            } else {
                u[k] = rnd_unit();
            }
        }
    }
    double h2 = 1.0 / ((double)(n - 1) * (double)(n - 1));
    for (int i = n / 3; i < n / 3 + n / 10 + 1; i++)
        for (int j = n / 2; j < n / 2 + n / 10 + 1; j++) f[(size_t)i * n + j] = strength;
    for (int it = 0; it < iters; it++) {
        for (int i = 1; i < n - 1; i++) {
            const double *up = u + (size_t)(i - 1) * n, *mid = u + (size_t)i * n,
                         *dn = u + (size_t)(i + 1) * n;
            double *out = v + (size_t)i * n;
            const double *fi = f + (size_t)i * n;
            for (int j = 1; j < n - 1; j++)
                out[j] = 0.25 * (up[j] + dn[j] + mid[j - 1] + mid[j + 1] + h2 * fi[j]);
        }
        double *t = u;
        u = v;
        v = t;
    }
    double total = 0, maxt = -1e300, res = 0;
    for (int i = 1; i < n - 1; i++) {
        for (int j = 1; j < n - 1; j++) {
            double x = u[(size_t)i * n + j];
            total += x;
            if (x > maxt) maxt = x;
            double r = u[(size_t)(i - 1) * n + j] + u[(size_t)(i + 1) * n + j] +
                       u[(size_t)i * n + j - 1] + u[(size_t)i * n + j + 1] - 4.0 * x +
                       h2 * f[(size_t)i * n + j];
            if (fabs(r) > res) res = fabs(r);
        }
    }
    printf("n %d iterations %d\n", n, iters);
    printf("mean_interior %.6f\n", total / ((double)(n - 2) * (double)(n - 2)));
    printf("max_interior %.6f\n", maxt);
    printf("centre %.6f quarter %.6f\n", u[(size_t)(n / 2) * n + n / 2], u[(size_t)(n / 4) * n + n / 4]);
    printf("residual %.6e\n", res);
    free(u);
    free(v);
    free(f);
    return 0;
}
