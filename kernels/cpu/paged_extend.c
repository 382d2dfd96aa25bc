/* Paged extend (prefill) attention on the CPU, reading the KV pool in place through the block tables.

   The engine's "native" backend (engine/backend.py) calls this through ctypes (kernels/cpu_extend.py),
   compiled with paged_decode.c into one library (kernels/cpu_native.py). It computes what
   kernels/reference.py's paged_extend_attention_ref computes -- sequence s's newest
   n_s = query_start[s + 1] - query_start[s] tokens, at positions [seq_lens[s] - n_s, seq_lens[s]),
   each attending to every key at a position up to its own: its cached prefix and, causally, the new
   tokens -- without the reference's gather and padding (the reference copies every page a sequence
   reads into a padded tensor, per layer, and pads every sequence's queries to the longest one's).

   Layouts (vLLM's, as everywhere in kernels/):
     q            (total_new, num_heads, head_dim) float32, contiguous
     k, v         (num_blocks, block_size, num_kv_heads, head_dim) float32, contiguous
     block_tables (num_seqs, bt_stride) int32: entry [s, p] is the block holding page p of sequence s
     query_start  (num_seqs + 1,) int32; seq_lens (num_seqs,) int32
     out          (total_new, num_heads, head_dim) float32
     scores       TILE rows * max(seq_lens) float32: scratch (the caller's, so that calls from several
                  threads at once share nothing)

   A tile is TILE query rows of one sequence and one KV head: ROWS new tokens x its `group` query heads
   (row m = token m / group, head m % group). Its keys are swept once for the scores and once for the
   values, each key read from its block where it lies and used by all TILE rows at once: the queries
   are held transposed (qt[d][m]), so that a key's scores are TILE-wide vector multiply-adds, a few
   keys at a time (independent sums), with no sum across a vector; the output rows are added to a few
   values at a time. The softmax runs down the score columns, every row at once.

   The caller (kernels/cpu_extend.py) has checked shapes, dtypes, contiguity and every index. */

#include <math.h>
#include <stdint.h>
#include <string.h>

#define TILE 16  /* query rows per tile: a 16-float vector */
#define KEYS 4   /* keys whose scores, or values, are summed at once */
#define HIDDEN (-1e30f) /* a masked score: exp(HIDDEN - top) is 0 (finite: -ffast-math assumes no inf) */

static inline __attribute__((always_inline)) const float *key_row(const float *base, const int32_t *table, int64_t t,
                                                                  int64_t block_size, int64_t page, int64_t row)
{
    return base + (int64_t)table[t / block_size] * page + (t % block_size) * row;
}

/* One tile: rows [0, used) hold real queries (the rest are zeros, their output dropped); the tile's
   first token is at position `pos0`; its keys are [0, num_keys). */
static inline __attribute__((always_inline)) void tile(
    const float *qt, const float *k, const float *v, const int32_t *table, int64_t num_keys, int64_t pos0,
    const int64_t group, const int64_t head_dim, int64_t block_size, int64_t page, int64_t row,
    float *scores, float *o, float *total)
{
    /* scores[t * TILE + m] = q_m . k_t (scale folded into q), KEYS keys at a time */
    for (int64_t t0 = 0; t0 < num_keys; t0 += KEYS) {
        const float *kp[KEYS];
        for (int64_t c = 0; c < KEYS; c++) {
            const int64_t t = t0 + c < num_keys ? t0 + c : num_keys - 1;
            kp[c] = key_row(k, table, t, block_size, page, row);
        }
        float acc[KEYS][TILE];
        for (int64_t c = 0; c < KEYS; c++)
            for (int64_t m = 0; m < TILE; m++) acc[c][m] = 0.0f;
        for (int64_t d = 0; d < head_dim; d++) {
            const float *qd = qt + d * TILE;
            for (int64_t c = 0; c < KEYS; c++) {
                const float kd = kp[c][d];
#pragma omp simd
                for (int64_t m = 0; m < TILE; m++) acc[c][m] += qd[m] * kd;
            }
        }
        const int64_t n = num_keys - t0 < KEYS ? num_keys - t0 : KEYS;
        for (int64_t c = 0; c < n; c++) memcpy(scores + (t0 + c) * TILE, acc[c], TILE * sizeof(float));
    }
    /* the causal mask: key t is hidden from row m when t > pos0 + m / group (only the tile's last keys) */
    for (int64_t t = pos0 + 1; t < num_keys; t++)
        for (int64_t m = 0; m < TILE; m++)
            if (t > pos0 + m / group) scores[t * TILE + m] = HIDDEN;
    /* softmax down each row's column, every row at once: exp(score - top), and its total */
    float top[TILE];
    for (int64_t m = 0; m < TILE; m++) top[m] = scores[m];
    for (int64_t t = 1; t < num_keys; t++) {
        const float *st = scores + t * TILE;
#pragma omp simd
        for (int64_t m = 0; m < TILE; m++) top[m] = st[m] > top[m] ? st[m] : top[m];
    }
    for (int64_t m = 0; m < TILE; m++) total[m] = 0.0f;
    for (int64_t t = 0; t < num_keys; t++) {
        float *st = scores + t * TILE;
#pragma omp simd
        for (int64_t m = 0; m < TILE; m++) {
            const float e = st[m] > 0.5f * HIDDEN ? expf(st[m] - top[m]) : 0.0f;
            st[m] = e;
            total[m] += e;
        }
    }
    /* o[m][d] = sum over t of p[t][m] * v_t[d], KEYS values at a time */
    for (int64_t j = 0; j < TILE * head_dim; j++) o[j] = 0.0f;
    for (int64_t t0 = 0; t0 < num_keys; t0 += KEYS) {
        const float *vp[KEYS];
        const float *w[KEYS];
        for (int64_t c = 0; c < KEYS; c++) {
            const int64_t t = t0 + c < num_keys ? t0 + c : num_keys - 1;
            vp[c] = key_row(v, table, t, block_size, page, row);
            w[c] = scores + t * TILE;
        }
        const int64_t n = num_keys - t0;
        for (int64_t m = 0; m < TILE; m++) {
            float wm[KEYS];
            for (int64_t c = 0; c < KEYS; c++) wm[c] = c < n ? w[c][m] : 0.0f;
            float *om = o + m * head_dim;
#pragma omp simd
            for (int64_t d = 0; d < head_dim; d++)
                om[d] += wm[0] * vp[0][d] + wm[1] * vp[1][d] + wm[2] * vp[2][d] + wm[3] * vp[3][d];
        }
    }
}

/* The kernel, inlined twice below: once with the lesson's model's shape as constants, once for any. */
static inline __attribute__((always_inline)) void extend(
    const float *q, const float *k, const float *v, const int32_t *block_tables, int64_t bt_stride,
    const int32_t *query_start, const int32_t *seq_lens, int64_t num_seqs, const int64_t num_heads,
    const int64_t num_kv_heads, const int64_t head_dim, int64_t block_size, float scale, float *out, float *scores)
{
    const int64_t group = num_heads / num_kv_heads;
    const int64_t tokens = group < TILE ? TILE / group : 1; /* new tokens per tile (group <= TILE: the caller's check) */
    const int64_t row = num_kv_heads * head_dim;            /* floats from one token's KV to the next's */
    const int64_t page = block_size * row;                  /* floats in one block */
    float qt[head_dim * TILE], o[TILE * head_dim], total[TILE];
    for (int64_t s = 0; s < num_seqs; s++) {
        const int64_t first = query_start[s], n = query_start[s + 1] - first, len = seq_lens[s];
        const int32_t *table = block_tables + s * bt_stride;
        for (int64_t kvh = 0; kvh < num_kv_heads; kvh++) {
            for (int64_t i0 = 0; i0 < n; i0 += tokens) {
                const int64_t used = (n - i0 < tokens ? n - i0 : tokens) * group;
                const int64_t pos0 = len - n + i0;
                for (int64_t j = 0; j < head_dim * TILE; j++) qt[j] = 0.0f;
                for (int64_t m = 0; m < used; m++) {
                    const float *qm = q + ((first + i0 + m / group) * num_heads + kvh * group + m % group) * head_dim;
                    for (int64_t d = 0; d < head_dim; d++) qt[d * TILE + m] = qm[d] * scale;
                }
                tile(qt, k + kvh * head_dim, v + kvh * head_dim, table, pos0 + used / group, pos0, group, head_dim,
                     block_size, page, row, scores, o, total);
                for (int64_t m = 0; m < used; m++) {
                    float *om = out + ((first + i0 + m / group) * num_heads + kvh * group + m % group) * head_dim;
                    const float inv = 1.0f / total[m];
                    for (int64_t d = 0; d < head_dim; d++) om[d] = o[m * head_dim + d] * inv;
                }
            }
        }
    }
}

void kvviz_paged_extend(const float *q, const float *k, const float *v, const int32_t *block_tables, int64_t bt_stride,
                        const int32_t *query_start, const int32_t *seq_lens, int64_t num_seqs, int64_t num_heads,
                        int64_t num_kv_heads, int64_t head_dim, int64_t block_size, float scale, float *out,
                        float *scores)
{
    if (head_dim == 32 && num_heads == 4 && num_kv_heads == 2)
        extend(q, k, v, block_tables, bt_stride, query_start, seq_lens, num_seqs, 4, 2, 32, block_size, scale, out,
               scores);
    else
        extend(q, k, v, block_tables, bt_stride, query_start, seq_lens, num_seqs, num_heads, num_kv_heads, head_dim,
               block_size, scale, out, scores);
}
