/* Polynomial multiplication with an iterative radix-2 complex FFT (bit reversal, precomputed
 * twiddles), rounded back to integers and checked against a direct product on a prefix.
 * Input: n seed (two polynomials of n coefficients in 0..999, drawn by a 64-bit xorshift
 * generator started from the 64-bit seed). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>
#include <math.h>

struct cpx {
    double re, im;
};

static void fft(struct cpx *a, size_t n, const struct cpx *w, int invert)
{
    for (size_t i = 1, j = 0; i < n; i++) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            struct cpx t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
    for (size_t len = 2; len <= n; len <<= 1) {
        size_t half = len >> 1, step = n / len;
        for (size_t i = 0; i < n; i += len) {
            for (size_t k = 0; k < half; k++) {
                struct cpx tw = w[k * step];
                if (invert) tw.im = -tw.im;
                struct cpx u = a[i + k], v = a[i + k + half];
                struct cpx t = {v.re * tw.re - v.im * tw.im, v.re * tw.im + v.im * tw.re};
                a[i + k].re = u.re + t.re;
                a[i + k].im = u.im + t.im;
                a[i + k + half].re = u.re - t.re;
                a[i + k + half].im = u.im - t.im;
            }
        }
    }
    if (invert) {
        for (size_t i = 0; i < n; i++) {
            a[i].re /= (double)n;
            a[i].im /= (double)n;
        }
    }
}

int main(void)
{
    size_t n;
    uint64_t seed;
    if (scanf("%zu %" SCNu64, &n, &seed) != 2 || n > (1u << 22)) {
        printf("bad input\n");
        return 0;
    }
    size_t size = 1;
    while (size < 2 * n) size <<= 1;
    uint32_t *p = malloc((n ? n : 1) * 4), *q = malloc((n ? n : 1) * 4);
    struct cpx *fa = calloc(size, sizeof *fa), *fb = calloc(size, sizeof *fb);
    struct cpx *w = malloc((size / 2 + 1) * sizeof *w);
    if (!p || !q || !fa || !fb || !w) return 1;
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
    if (s == 0) s = 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = (uint32_t)(s % 1000);
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        q[i] = (uint32_t)(s % 1000);
        fa[i].re = p[i];
        fb[i].re = q[i];
    }
    const double PI = 3.14159265358979323846;
    for (size_t k = 0; k < size / 2 + 1; k++) {
        double ang = 2.0 * PI * (double)k / (double)size;
        w[k].re = cos(ang);
        w[k].im = sin(ang);
    }
    fft(fa, size, w, 0);
    fft(fb, size, w, 0);
    for (size_t i = 0; i < size; i++) {
        double re = fa[i].re * fb[i].re - fa[i].im * fb[i].im;
        double im = fa[i].re * fb[i].im + fa[i].im * fb[i].re;
        fa[i].re = re;
        fa[i].im = im;
    }
    fft(fa, size, w, 1);
    size_t outn = n ? 2 * n - 1 : 0;
    uint64_t h = 0, total = 0;
    double maxerr = 0.0;
    uint64_t maxcoef = 0;
    for (size_t i = 0; i < outn; i++) {
        double r = floor(fa[i].re + 0.5);
        double err = fabs(fa[i].re - r);
        if (err > maxerr) maxerr = err;
        uint64_t c = r > 0 ? (uint64_t)r : 0;
        total += c;
        if (c > maxcoef) maxcoef = c;
        h = h * 1000003u + c;
    }
    /* direct check of the first coefficients */
    size_t check = outn < 300 ? outn : 300;
    size_t bad = 0;
    for (size_t i = 0; i < check; i++) {
        uint64_t c = 0;
        for (size_t j = 0; j <= i; j++)
            if (j < n && i - j < n) c += (uint64_t)p[j] * q[i - j];
        if ((double)c != floor(fa[i].re + 0.5)) bad++;
    }
    printf("n %zu fft_size %zu\n", n, size);
    printf("coef_sum %llu max_coef %llu hash %llu\n", (unsigned long long)total,
           (unsigned long long)maxcoef, (unsigned long long)h);
    printf("checked %zu mismatches %zu\n", check, bad);
    printf("max_rounding_error_below_0.01 %d\n", maxerr < 0.01);
    free(p); free(q); free(fa); free(fb); free(w);
    return 0;
}
