/* Softened gravitational N-body simulation with a leapfrog (kick-drift-kick) integrator over
 * an array of small structs; prints energy and momentum before and after.
 * Input: bodies steps dt seed. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <math.h>

struct body {
    double x, y, z;
    double vx, vy, vz;
    double ax, ay, az;
    double m;
};

static const double EPS2 = 0.01;

static void accelerations(struct body *b, int n)
{
    for (int i = 0; i < n; i++) b[i].ax = b[i].ay = b[i].az = 0.0;
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            double dx = b[j].x - b[i].x, dy = b[j].y - b[i].y, dz = b[j].z - b[i].z;
            double r2 = dx * dx + dy * dy + dz * dz + EPS2;
            double inv = 1.0 / (r2 * sqrt(r2));
            double si = b[j].m * inv, sj = b[i].m * inv;
            b[i].ax += dx * si;
            b[i].ay += dy * si;
            b[i].az += dz * si;
            b[j].ax -= dx * sj;
            b[j].ay -= dy * sj;
            b[j].az -= dz * sj;
        }
    }
}

static double energy(const struct body *b, int n)
{
    double e = 0.0;
    for (int i = 0; i < n; i++) {
        e += 0.5 * b[i].m * (b[i].vx * b[i].vx + b[i].vy * b[i].vy + b[i].vz * b[i].vz);
        for (int j = i + 1; j < n; j++) {
            double dx = b[j].x - b[i].x, dy = b[j].y - b[i].y, dz = b[j].z - b[i].z;
            e -= b[i].m * b[j].m / sqrt(dx * dx + dy * dy + dz * dz + EPS2);
        }
    }
    return e;
}

int main(void)
{
    int n, steps;
    double dt;
    unsigned long long seed;
    if (scanf("%d %d %lf %llu", &n, &steps, &dt, &seed) != 4 || n < 1 || steps < 0) {
        printf("bad input\n");
        return 0;
    }
    struct body *b = calloc((size_t)n, sizeof *b);
    if (!b) return 1;
    uint64_t s = seed + 1;
    for (int i = 0; i < n; i++) {
        double u[7];
        for (int k = 0; k < 7; k++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            u[k] = (double)(s >> 11) / 9007199254740992.0;
        }
        b[i].x = 2 * u[0] - 1;
        b[i].y = 2 * u[1] - 1;
        b[i].z = 0.2 * (2 * u[2] - 1);
        /* rough rotation about the z axis */
        b[i].vx = -b[i].y * 0.5 + 0.05 * (u[3] - 0.5);
        b[i].vy = b[i].x * 0.5 + 0.05 * (u[4] - 0.5);
        b[i].vz = 0.05 * (u[5] - 0.5);
        b[i].m = (0.5 + u[6]) / n;
    }
    double e0 = energy(b, n);
    accelerations(b, n);
    for (int st = 0; st < steps; st++) {
        for (int i = 0; i < n; i++) {
            b[i].vx += 0.5 * dt * b[i].ax;
            b[i].vy += 0.5 * dt * b[i].ay;
            b[i].vz += 0.5 * dt * b[i].az;
            b[i].x += dt * b[i].vx;
            b[i].y += dt * b[i].vy;
            b[i].z += dt * b[i].vz;
        }
        accelerations(b, n);
        for (int i = 0; i < n; i++) {
            b[i].vx += 0.5 * dt * b[i].ax;
            b[i].vy += 0.5 * dt * b[i].ay;
            b[i].vz += 0.5 * dt * b[i].az;
        }
    }
    double e1 = energy(b, n);
    double px = 0, py = 0, pz = 0, cx = 0, cy = 0, cz = 0, mt = 0;
    for (int i = 0; i < n; i++) {
        px += b[i].m * b[i].vx;
        py += b[i].m * b[i].vy;
        pz += b[i].m * b[i].vz;
        cx += b[i].m * b[i].x;
        cy += b[i].m * b[i].y;
        cz += b[i].m * b[i].z;
        mt += b[i].m;
    }
    printf("bodies %d steps %d\n", n, steps);
    printf("energy_before %.8f\n", e0);
    printf("energy_after %.8f\n", e1);
    printf("momentum %.8f %.8f %.8f\n", px, py, pz);
    printf("centre_of_mass %.6f %.6f %.6f\n", cx / mt, cy / mt, cz / mt);
    free(b);
    return 0;
}
