/* The native backend's small per-layer operations in C, so that a layer is a few calls, not ~20.

   kernels/cpu_layer.py calls these through ctypes; kernels/cpu_build.py compiles this file with the
   others, but without -ffast-math and with -ffp-contract=off: each product and sum here is rounded
   as torch rounds it (no fused multiply-adds), so RoPE and the residual adds give torch's floats bit
   for bit. (RMSNorm's sum of squares runs in another order than torch's: its last bit may differ.)

   Layouts:
     qkv          (rows, (num_heads + 2 * num_kv_heads) * head_dim) float32: the fused q/k/v matmul's
                  output, each row q's heads, then k's, then v's
     cos, sin     (max_seq_len, head_dim) float32: engine/model.py's rope_tables ([cos, cos] and
                  [-sin, sin]), read at row positions[r]
     k, v         (num_blocks, block_size, num_kv_heads, head_dim) float32: the pool; token r's K and
                  V go to slot slots[r] (block * block_size + offset)
     q            (rows, num_heads, head_dim) float32: the rotated queries

   The caller (kernels/cpu_layer.py) has checked shapes, dtypes, contiguity and every index: each
   position is a row of the tables, each slot a slot of the pool. */

#include <math.h>
#include <stdint.h>
#include <string.h>

void kvviz_paged_decode(const float *q, const float *k, const float *v, const int32_t *block_tables,
                        int64_t bt_stride, const int32_t *seq_lens, int64_t num_seqs, int64_t num_heads,
                        int64_t num_kv_heads, int64_t head_dim, int64_t block_size, float scale, float *out,
                        float *scores);

/* x rotated: x * cos + roll(x, half) * sin, where roll(x, half)[i] = x[(i - half) mod head_dim]
   (engine/model.py's apply_rope: two products, each rounded, then their sum) */
static inline void rotate(const float *x, const float *c, const float *s, float *out, int64_t head_dim)
{
    const int64_t half = head_dim / 2;
    for (int64_t i = 0; i < half; i++) out[i] = x[i] * c[i] + x[i + head_dim - half] * s[i];
    for (int64_t i = half; i < head_dim; i++) out[i] = x[i] * c[i] + x[i - half] * s[i];
}

static inline __attribute__((always_inline)) void rope_store(
    const float *qkv, const float *cos, const float *sin, const int64_t *positions, const int64_t *slots,
    int64_t rows, const int64_t num_heads, const int64_t num_kv_heads, const int64_t head_dim, float *k,
    float *v, float *q)
{
    const int64_t width = (num_heads + 2 * num_kv_heads) * head_dim, kv_row = num_kv_heads * head_dim;
    for (int64_t r = 0; r < rows; r++) {
        const float *x = qkv + r * width;
        const float *c = cos + positions[r] * head_dim, *s = sin + positions[r] * head_dim;
        for (int64_t h = 0; h < num_heads; h++)
            rotate(x + h * head_dim, c, s, q + (r * num_heads + h) * head_dim, head_dim);
        float *kr = k + slots[r] * kv_row;
        for (int64_t h = 0; h < num_kv_heads; h++)
            rotate(x + (num_heads + h) * head_dim, c, s, kr + h * head_dim, head_dim);
        memcpy(v + slots[r] * kv_row, x + (num_heads + num_kv_heads) * head_dim, (size_t)kv_row * sizeof(float));
    }
}

/* Each row's q and k rotated (RoPE), its K and V written to its slot, its q to `q`. */
void kvviz_rope_store(const float *qkv, const float *cos, const float *sin, const int64_t *positions,
                      const int64_t *slots, int64_t rows, int64_t num_heads, int64_t num_kv_heads,
                      int64_t head_dim, float *k, float *v, float *q)
{
    if (head_dim == 32 && num_heads == 4 && num_kv_heads == 2) /* the lesson's model: loops unrolled */
        rope_store(qkv, cos, sin, positions, slots, rows, 4, 2, 32, k, v, q);
    else
        rope_store(qkv, cos, sin, positions, slots, rows, num_heads, num_kv_heads, head_dim, k, v, q);
}

/* A decode layer's attention in one call: kvviz_rope_store for each sequence's one new token, then
   kvviz_paged_decode (paged_decode.c) over the pool, out (num_seqs, num_heads, head_dim). */
void kvviz_decode_layer(const float *qkv, const float *cos, const float *sin, const int64_t *positions,
                        const int64_t *slots, int64_t num_seqs, int64_t num_heads, int64_t num_kv_heads,
                        int64_t head_dim, float *k, float *v, float *q, const int32_t *block_tables,
                        int64_t bt_stride, const int32_t *seq_lens, int64_t block_size, float scale, float *out,
                        float *scores)
{
    kvviz_rope_store(qkv, cos, sin, positions, slots, num_seqs, num_heads, num_kv_heads, head_dim, k, v, q);
    kvviz_paged_decode(q, k, v, block_tables, bt_stride, seq_lens, num_seqs, num_heads, num_kv_heads, head_dim,
                       block_size, scale, out, scores);
}

/* h += a (when a is given), then out = h * (1 / sqrt(mean(h^2) + eps)) * weight, row by row: the
   residual add and the RMSNorm after it (torch's rms_norm: the scaled row, rounded, times weight). */
void kvviz_add_rms_norm(float *h, const float *a, const float *weight, int64_t rows, int64_t dim, float eps,
                        float *out)
{
    for (int64_t r = 0; r < rows; r++) {
        float *hr = h + r * dim, *o = out + r * dim;
        if (a) {
            const float *ar = a + r * dim;
#pragma omp simd
            for (int64_t d = 0; d < dim; d++) hr[d] += ar[d];
        }
        float total = 0.0f;
#pragma omp simd reduction(+ : total)
        for (int64_t d = 0; d < dim; d++) total += hr[d] * hr[d];
        const float inv = 1.0f / sqrtf(total / (float)dim + eps);
#pragma omp simd
        for (int64_t d = 0; d < dim; d++) o[d] = (hr[d] * inv) * weight[d];
    }
}
