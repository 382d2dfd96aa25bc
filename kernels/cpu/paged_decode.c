/* Paged decode attention on the CPU, reading the KV pool in place through the block tables.

   The engine's "native" backend (engine/backend.py) calls this through ctypes (kernels/cpu_native.py);
   kernels/cpu_build.py compiles it, with paged_extend.c, with the machine's C compiler on first use.
   It computes what kernels/reference.py's paged_decode_attention_ref computes -- one query token per sequence,
   attending to its seq_lens[s] cached tokens -- without the reference's gather: the reference copies
   every page a sequence reads into a padded tensor, per layer, before attending; here each key and
   value is read once, from its block, where it lies.

   Layouts (vLLM's, as everywhere in kernels/):
     q            (num_seqs, num_heads, head_dim) float32, contiguous
     k, v         (num_blocks, block_size, num_kv_heads, head_dim) float32, contiguous
     block_tables (num_seqs, bt_stride) int32: entry [s, p] is the block holding page p of sequence s
     seq_lens     (num_seqs,) int32
     out          (num_seqs, num_heads, head_dim) float32
     scores       num_heads * max(seq_lens) float32: scratch (the caller's, so that calls from
                  several threads at once share nothing)
   Grouped KV heads: query head h reads KV head h / group. A sequence's pages are swept once for the
   keys and once for the values, each token's row (all its KV heads) read whole and in order, and
   the next page fetched ahead while this one is read: a batch's KV is megabytes per layer, read from
   memory, so the reads, not the arithmetic, are what this costs.

   The caller (kernels/cpu_native.py) has checked shapes, dtypes, contiguity and every index. */

#include <math.h>
#include <stdint.h>
#include <string.h>

/* the next page's row i, asked for ahead of its use (four 64-byte lines: a row of 2 heads x 32 floats) */
static inline void fetch_row(const float *row_start, int64_t row)
{
    for (int64_t f = 0; f < row; f += 16) __builtin_prefetch(row_start + f, 0, 3);
}

/* The kernel, inlined twice below: once with head_dim a constant 32 (the lesson's model), which the
   compiler turns into whole-register loads and keeps each head's output sum in registers, and once
   for any head_dim. */
static inline __attribute__((always_inline)) void decode(
    const float *q, const float *k, const float *v, const int32_t *block_tables, int64_t bt_stride,
    const int32_t *seq_lens, int64_t num_seqs, const int64_t num_heads, const int64_t num_kv_heads, const int64_t head_dim,
    int64_t block_size, float scale, float *out, float *scores)
{
    const int64_t group = num_heads / num_kv_heads;
    const int64_t row = num_kv_heads * head_dim; /* floats from one token's KV to the next's */
    const int64_t page = block_size * row;       /* floats in one block */
    for (int64_t s = 0; s < num_seqs; s++) {
        const int64_t len = seq_lens[s];
        const int64_t pages = (len + block_size - 1) / block_size;
        const int32_t *table = block_tables + s * bt_stride;
        const float *qs = q + s * num_heads * head_dim;
        float *os = out + s * num_heads * head_dim;
        /* scores[h * len + t] = q_h . k_t[h / group] * scale: one sweep of the pages, in order */
        for (int64_t p = 0; p < pages; p++) {
            const float *kp = k + (int64_t)table[p] * page;
            const float *next = p + 1 < pages ? k + (int64_t)table[p + 1] * page : v + (int64_t)table[0] * page;
            const int64_t n = p + 1 < pages ? block_size : len - p * block_size;
            for (int64_t i = 0; i < n; i++) {
                fetch_row(next + i * row, row);
                const float *kt = kp + i * row;
                for (int64_t h = 0; h < num_heads; h++) {
                    const float *qh = qs + h * head_dim, *kh = kt + (h / group) * head_dim;
                    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
                    for (int64_t d = 0; d < head_dim; d++) acc += qh[d] * kh[d];
                    scores[h * len + p * block_size + i] = acc * scale;
                }
            }
        }
        /* softmax over each query head's scores */
        for (int64_t h = 0; h < num_heads; h++) {
            float *sh = scores + h * len;
            float top = sh[0];
#pragma omp simd reduction(max : top)
            for (int64_t t = 1; t < len; t++) top = sh[t] > top ? sh[t] : top;
            float total = 0.0f;
#pragma omp simd reduction(+ : total)
            for (int64_t t = 0; t < len; t++) {
                sh[t] = expf(sh[t] - top);
                total += sh[t];
            }
            const float inv = 1.0f / total;
#pragma omp simd
            for (int64_t t = 0; t < len; t++) sh[t] *= inv;
        }
        /* out_h = sum over t of p_h[t] * v_t[h / group]: one sweep of the pages, every head's sum
           kept in registers when the shape is a constant (below) */
        float acc[num_heads * head_dim];
        for (int64_t j = 0; j < num_heads * head_dim; j++) acc[j] = 0.0f;
        for (int64_t p = 0; p < pages; p++) {
            const float *vp = v + (int64_t)table[p] * page;
            const float *next = p + 1 < pages ? v + (int64_t)table[p + 1] * page : NULL;
            const int64_t n = p + 1 < pages ? block_size : len - p * block_size;
            for (int64_t i = 0; i < n; i++) {
                if (next) fetch_row(next + i * row, row);
                const float *vt = vp + i * row;
                for (int64_t h = 0; h < num_heads; h++) {
                    const float w = scores[h * len + p * block_size + i], *vh = vt + (h / group) * head_dim;
                    float *ah = acc + h * head_dim;
#pragma omp simd
                    for (int64_t d = 0; d < head_dim; d++) ah[d] += w * vh[d];
                }
            }
        }
        memcpy(os, acc, (size_t)(num_heads * head_dim) * sizeof(float));
    }
}

void kvviz_paged_decode(const float *q, const float *k, const float *v, const int32_t *block_tables,
                        int64_t bt_stride, const int32_t *seq_lens, int64_t num_seqs, int64_t num_heads,
                        int64_t num_kv_heads, int64_t head_dim, int64_t block_size, float scale, float *out,
                        float *scores)
{
    if (head_dim == 32 && num_heads == 4 && num_kv_heads == 2)
        decode(q, k, v, block_tables, bt_stride, seq_lens, num_seqs, 4, 2, 32, block_size, scale, out, scores);
    else
        decode(q, k, v, block_tables, bt_stride, seq_lens, num_seqs, num_heads, num_kv_heads, head_dim, block_size,
               scale, out, scores);
}
