// y = x @ w.T for a few float32 rows of x, reading every weight row once for all of them.
//
// A decode step multiplies every weight by batch x loops rows. With few rows the product is
// bound by streaming the weight from memory, so R rows should cost about what one row costs.
// The float32 BLAS behind F.linear does not do that on every CPU: on an Intel Xeon it charges
// 1.1-1.4x for 2 rows and 2-2.9x for 8 rows of a 7B-sized weight. Here each pass over a block
// of B weight rows keeps R x B vector accumulators in registers (R x B <= 18 of the 32 AVX-512
// registers) and reads each weight element once for all R rows; more than 8 rows go 8 at a
// time through each block while its weight rows are still in cache. Blocks of output features are split over torch's own intra-op threads
// (at::parallel_for), so the kernel shares torch's thread pool instead of competing with it.
//
// Built for the CPU it runs on (-march=native) by `native.py`; the vector type below compiles
// to AVX-512, AVX2 or SSE loads and fused multiply-adds as the CPU allows.
#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

namespace {

// 16 floats; the aligned(4) copy allows unaligned loads from the weight and input rows.
typedef float vec16 __attribute__((vector_size(64)));
typedef float vec16_unaligned __attribute__((vector_size(64), aligned(4)));

inline float horizontal_sum(vec16 v) {
    float sum = 0.f;
    for (int i = 0; i < 16; i++) sum += v[i];
    return sum;
}

// One block of B output features j..j+B-1 for R rows: y[r][j + b] = sum_k x[r][k] * w[j + b][k].
// `x` and `y` point at the block's first row, `wj` at weight row j.
template <int R, int B>
void rows_block(const float *x, const float *wj, float *y, int64_t n, int64_t out, int64_t j) {
    const int64_t vector_end = n / 16 * 16;
    vec16 acc[R][B];
    for (int r = 0; r < R; r++)
        for (int b = 0; b < B; b++) acc[r][b] = vec16{};
    for (int64_t k = 0; k < vector_end; k += 16) {
        vec16 wv[B];
        for (int b = 0; b < B; b++) wv[b] = *(const vec16_unaligned *)(wj + b * n + k);
        for (int r = 0; r < R; r++) {
            const vec16 xv = *(const vec16_unaligned *)(x + r * n + k);
            for (int b = 0; b < B; b++) acc[r][b] += xv * wv[b];
        }
    }
    for (int r = 0; r < R; r++)
        for (int b = 0; b < B; b++) {
            float sum = horizontal_sum(acc[r][b]);
            for (int64_t k = vector_end; k < n; k++) sum += x[r * n + k] * wj[b * n + k];
            y[r * out + j + b] = sum;
        }
}

// R (1-8) rows of one block; only the (R, B) pairs that fit the registers are instantiated.
template <int B>
void rows_block_any(int R, const float *x, const float *wj, float *y, int64_t n, int64_t out,
                    int64_t j) {
#define ASMOPT_ROWS_CASE(r)                                                          \
    case r:                                                                          \
        if constexpr (r * B <= 18) return rows_block<r, B>(x, wj, y, n, out, j);    \
        break;
    switch (R) {
        ASMOPT_ROWS_CASE(1)
        ASMOPT_ROWS_CASE(2)
        ASMOPT_ROWS_CASE(3)
        ASMOPT_ROWS_CASE(4)
        ASMOPT_ROWS_CASE(5)
        ASMOPT_ROWS_CASE(6)
        ASMOPT_ROWS_CASE(7)
        ASMOPT_ROWS_CASE(8)
    }
#undef ASMOPT_ROWS_CASE
    TORCH_CHECK(false, "rows_product: no kernel for ", R, " rows in blocks of ", B);
}

// All rows, output blocks split over torch's intra-op threads. More than 8 rows go 8 at a
// time through each block before the next block, so the block's B weight rows are read from
// memory once and from cache for the later chunks.
template <int B>
void rows_parallel(const float *x, const float *w, float *y, int64_t rows, int64_t n,
                   int64_t out) {
    const int64_t blocks = (out + B - 1) / B;
    // Grain: at least ~64 KiB of weight per task, so small products are not over-split.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, n * B));
    at::parallel_for(0, blocks, grain, [&](int64_t first, int64_t last) {
        for (int64_t block = first; block < last; block++) {
            const int64_t j = block * B;
            const float *wj = w + j * n;
            if (j + B > out) {  // fewer than B features left: plain loops
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t jj = j; jj < out; jj++) {
                        float sum = 0.f;
                        for (int64_t k = 0; k < n; k++) sum += x[r * n + k] * w[jj * n + k];
                        y[r * out + jj] = sum;
                    }
                continue;
            }
            for (int64_t r0 = 0; r0 < rows; r0 += 8) {
                const int R = static_cast<int>(std::min<int64_t>(8, rows - r0));
                rows_block_any<B>(R, x + r0 * n, wj, y + r0 * out, n, out, j);
            }
        }
    });
}


}  // namespace

torch::Tensor rows_product(torch::Tensor x, torch::Tensor weight) {
    TORCH_CHECK(x.device().is_cpu() && weight.device().is_cpu(), "rows_product: CPU tensors only");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32,
                "rows_product: float32 only");
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1),
                "rows_product: x [rows, in] and weight [out, in], got ", x.sizes(), " and ",
                weight.sizes());
    const auto xc = x.contiguous();
    const auto wc = weight.contiguous();
    const int64_t rows = xc.size(0), n = xc.size(1), out = wc.size(0);
    auto y = torch::empty({rows, out}, xc.options());
    if (rows == 0 || out == 0) return y;
    const float *xp = xc.data_ptr<float>();
    const float *wp = wc.data_ptr<float>();
    float *yp = y.data_ptr<float>();
    // Block sizes: as many weight rows per pass as rows x block accumulators allow.
    switch (std::min<int64_t>(rows, 7)) {
        case 1: rows_parallel<16>(xp, wp, yp, rows, n, out); break;
        case 2: rows_parallel<8>(xp, wp, yp, rows, n, out); break;
        case 3: rows_parallel<6>(xp, wp, yp, rows, n, out); break;
        case 4: rows_parallel<4>(xp, wp, yp, rows, n, out); break;
        case 5:
        case 6: rows_parallel<3>(xp, wp, yp, rows, n, out); break;
        default: rows_parallel<2>(xp, wp, yp, rows, n, out); break;
    }
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("rows_product", &rows_product, "x @ weight.T for a few float32 rows of x");
}
