/* Paged decode attention on the CPU, reading the KV pool in place through the block tables.

   The engine's "cpu" backend (engine/backend.py) calls this through ctypes (kernels/cpu_native.py),
   which compiles it with the machine's C compiler on first use. It computes what
   kernels/reference.py's paged_decode_attention_ref computes -- one query token per sequence,
   attending to its seq_lens[s] cached tokens -- without the reference's gather: the reference copies
   every page a sequence reads into a padded tensor, per layer, before attending; here each key and
   value is read once, from its block, where it lies.

   Layouts (vLLM's, as everywhere in kernels/):
     q            (num_seqs, num_heads, head_dim) float32, contiguous
     k, v         (num_blocks, block_size, num_kv_heads, head_dim) float32, contiguous
     block_tables (num_seqs, bt_stride) int32: entry [s, p] is the block holding page p of sequence s
     seq_lens     (num_seqs,) int32
     out          (num_seqs, num_heads, head_dim) float32
     scratch      group * max(seq_lens) float32: the scores (the caller's, so that calls from
                  several threads at once share nothing)
   Grouped KV heads: query heads [h * group, (h + 1) * group) read KV head h, so each (sequence, KV
   head) pair reads its keys and values once for all its query heads.

   The caller (kernels/cpu_native.py) has checked shapes, dtypes, contiguity and every index. */

#include <math.h>
#include <stdint.h>
#include <string.h>

void kvviz_paged_decode(const float *q, const float *k, const float *v, const int32_t *block_tables,
                       int64_t bt_stride, const int32_t *seq_lens, int64_t num_seqs, int64_t num_heads,
                       int64_t num_kv_heads, int64_t head_dim, int64_t block_size, float scale, float *out, float *scores)
{
    const int64_t group = num_heads / num_kv_heads;
    const int64_t row = num_kv_heads * head_dim; /* floats from one token's KV to the next's */
    for (int64_t s = 0; s < num_seqs; s++) {
        const int64_t len = seq_lens[s];
        const int32_t *table = block_tables + s * bt_stride;
        for (int64_t h = 0; h < num_kv_heads; h++) {
            const float *qh = q + (s * num_heads + h * group) * head_dim;
            float *oh = out + (s * num_heads + h * group) * head_dim;
            /* scores[g * len + t] = q_g . k_t * scale, page by page */
            for (int64_t first = 0; first < len; first += block_size) {
                const float *kp = k + (int64_t)table[first / block_size] * block_size * row + h * head_dim;
                const int64_t n = len - first < block_size ? len - first : block_size;
                for (int64_t i = 0; i < n; i++) {
                    const float *kt = kp + i * row;
                    for (int64_t g = 0; g < group; g++) {
                        const float *qg = qh + g * head_dim;
                        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
                        for (int64_t d = 0; d < head_dim; d++) acc += qg[d] * kt[d];
                        scores[g * len + first + i] = acc * scale;
                    }
                }
            }
            /* softmax over each query head's scores */
            for (int64_t g = 0; g < group; g++) {
                float *sg = scores + g * len;
                float top = sg[0];
#pragma omp simd reduction(max : top)
                for (int64_t t = 1; t < len; t++) top = sg[t] > top ? sg[t] : top;
                float total = 0.0f;
#pragma omp simd reduction(+ : total)
                for (int64_t t = 0; t < len; t++) {
                    sg[t] = expf(sg[t] - top);
                    total += sg[t];
                }
                const float inv = 1.0f / total;
#pragma omp simd
                for (int64_t t = 0; t < len; t++) sg[t] *= inv;
                memset(oh + g * head_dim, 0, (size_t)head_dim * sizeof(float));
            }
            /* the weighted sum of the values, page by page */
            for (int64_t first = 0; first < len; first += block_size) {
                const float *vp = v + (int64_t)table[first / block_size] * block_size * row + h * head_dim;
                const int64_t n = len - first < block_size ? len - first : block_size;
                for (int64_t i = 0; i < n; i++) {
                    const float *vt = vp + i * row;
                    for (int64_t g = 0; g < group; g++) {
                        const float p = scores[g * len + first + i];
                        float *og = oh + g * head_dim;
#pragma omp simd
                        for (int64_t d = 0; d < head_dim; d++) og[d] += p * vt[d];
                    }
                }
            }
        }
    }
}
