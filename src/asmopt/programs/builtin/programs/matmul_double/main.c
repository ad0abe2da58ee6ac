/* Double-precision matrix product with cache blocking (i-k-j inside 32x32 tiles), then
 * the trace, Frobenius norm and a few entries, printed with limited precision.
 * Input: n seed. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <math.h>

#define TILE 32

int main(void)
{
    int n;
    unsigned long long seed;
    if (scanf("%d %llu", &n, &seed) != 2 || n < 0 || n > 4096) {
        printf("bad input\n");
        return 0;
    }
    size_t nn = (size_t)n * (size_t)n;
    double *A = malloc((nn ? nn : 1) * sizeof *A);
    double *B = malloc((nn ? nn : 1) * sizeof *B);
    double *C = calloc(nn ? nn : 1, sizeof *C);
    if (!A || !B || !C) return 1;
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < nn; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        A[i] = (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0 - 0.5;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        B[i] = (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    }
    for (int ii = 0; ii < n; ii += TILE) {
        int ie = ii + TILE < n ? ii + TILE : n;
        for (int kk = 0; kk < n; kk += TILE) {
            int ke = kk + TILE < n ? kk + TILE : n;
            for (int jj = 0; jj < n; jj += TILE) {
                int je = jj + TILE < n ? jj + TILE : n;
                for (int i = ii; i < ie; i++) {
                    double *ci = C + (size_t)i * n;
                    for (int k = kk; k < ke; k++) {
                        double a = A[(size_t)i * n + k];
                        const double *bk = B + (size_t)k * n;
                        for (int j = jj; j < je; j++) ci[j] += a * bk[j];
                    }
                }
            }
        }
    }
    double trace = 0, frob = 0, colsum = 0;
    for (int i = 0; i < n; i++) trace += C[(size_t)i * n + i];
    for (size_t i = 0; i < nn; i++) frob += C[i] * C[i];
    for (int i = 0; i < n; i++) colsum += C[(size_t)i * n + (size_t)(n - 1)];
    printf("n %d\n", n);
    printf("trace %.6f\n", trace);
    printf("frobenius %.6f\n", sqrt(frob));
    printf("last_column_sum %.6f\n", colsum);
    if (n) printf("c00 %.6f cmid %.6f\n", C[0], C[(size_t)(n / 2) * n + (size_t)(n / 3)]);
    free(A);
    free(B);
    free(C);
    return 0;
}
