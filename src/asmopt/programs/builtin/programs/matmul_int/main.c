/* Dense integer matrix product C = A * B (wrapping 32-bit arithmetic) with the i-k-j loop
 * order, then C * v and trace/row checksums.
 * Input: n seed. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

int main(void)
{
    int n;
    unsigned seed;
    if (scanf("%d %u", &n, &seed) != 2 || n < 0 || n > 4096) {
        printf("bad input\n");
        return 0;
    }
    size_t nn = (size_t)n * (size_t)n;
    uint32_t *A = malloc((nn ? nn : 1) * 4), *B = malloc((nn ? nn : 1) * 4);
    uint32_t *C = malloc((nn ? nn : 1) * 4);
    uint32_t *v = malloc((size_t)(n ? n : 1) * 4), *Cv = malloc((size_t)(n ? n : 1) * 4);
    if (!A || !B || !C || !v || !Cv) return 1;
    uint32_t s = seed | 1;
    for (size_t i = 0; i < nn; i++) {
        s = s * 1664525u + 1013904223u;
        A[i] = (s >> 20) & 1023;
        s = s * 1664525u + 1013904223u;
        B[i] = (s >> 13) ^ (s >> 27);
    }
    for (int i = 0; i < n; i++) v[i] = (uint32_t)i * 2654435761u;
    memset(C, 0, nn * 4);
    for (int i = 0; i < n; i++) {
        uint32_t *ci = C + (size_t)i * n;
        for (int k = 0; k < n; k++) {
            uint32_t a = A[(size_t)i * n + k];
            const uint32_t *bk = B + (size_t)k * n;
            for (int j = 0; j < n; j++) ci[j] += a * bk[j];
        }
    }
    uint32_t trace = 0, anti = 0;
    uint64_t rows = 0;
    for (int i = 0; i < n; i++) {
        trace += C[(size_t)i * n + i];
        anti += C[(size_t)i * n + (n - 1 - i)];
        uint32_t acc = 0;
        for (int j = 0; j < n; j++) acc += C[(size_t)i * n + j] * v[j];
        Cv[i] = acc;
        rows = rows * 1000003u + acc;
    }
    uint32_t mx = 0;
    for (size_t i = 0; i < nn; i++) if (C[i] > mx) mx = C[i];
    printf("n %d trace %u antitrace %u\n", n, trace, anti);
    printf("cv_hash %llu max %u\n", (unsigned long long)rows, mx);
    if (n) printf("c00 %u cnn %u\n", C[0], C[nn - 1]);
    free(A); free(B); free(C); free(v); free(Cv);
    return 0;
}
