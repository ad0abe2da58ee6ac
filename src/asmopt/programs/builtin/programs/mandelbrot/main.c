/* Escape-time Mandelbrot set over a rectangle of the complex plane: total iterations,
 * points inside, and totals per horizontal band; a smooth-colouring average as well.
 * Input: width height max_iter x0 y0 x1 y1. */
#include <stdio.h>
#include <math.h>

int main(void)
{
    int W, H, maxit;
    double x0, y0, x1, y1;
    if (scanf("%d %d %d %lf %lf %lf %lf", &W, &H, &maxit, &x0, &y0, &x1, &y1) != 7 || W < 1 ||
        H < 1 || maxit < 1) {
        printf("bad input\n");
        return 0;
    }
    long long total = 0, inside = 0;
    long long band[8] = {0};
    double smooth = 0.0;
    long long escaped = 0;
    for (int r = 0; r < H; r++) {
        double ci = y0 + (y1 - y0) * ((double)r + 0.5) / (double)H;
        for (int c = 0; c < W; c++) {
            double cr = x0 + (x1 - x0) * ((double)c + 0.5) / (double)W;
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
