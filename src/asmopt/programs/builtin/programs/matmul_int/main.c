/* Dense integer matrix product C = A * B (wrapping 32-bit arithmetic) with the i-k-j loop
 * order, then C * v and trace/row checksums.
 * Input: n seed (A: 10-bit and B: 32-bit entries from the high halves of a 64-bit LCG
 * started at the 64-bit seed). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <inttypes.h>
#include <string.h>

int main(void)
{
    int n;
    uint64_t seed;
    if (scanf("%d %" SCNu64, &n, &seed) != 2 || n < 0 || n > 4096) {
        printf("bad input\n");
        return 0;
    }
    size_t nn = (size_t)n * (size_t)n;
    uint32_t *A = malloc((nn ? nn : 1) * 4), *B = malloc((nn ? nn : 1) * 4);
    uint32_t *C = malloc((nn ? nn : 1) * 4);
    uint32_t *v = malloc((size_t)(n ? n : 1) * 4), *Cv = malloc((size_t)(n ? n : 1) * 4);
    if (!A || !B || !C || !v || !Cv) return 1;
    uint64_t s = seed;
    for (size_t i = 0; i < nn; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        A[i] = (uint32_t)(s >> 54);
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        B[i] = (uint32_t)(s >> 32) ^ (uint32_t)(s >> 45);
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
