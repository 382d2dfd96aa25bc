/* Paged extend (prefill) attention on the CPU, reading the KV pool in place through the block tables.

   The engine's "native" backend (engine/backend.py) calls this through ctypes (kernels/cpu_extend.py),
   compiled with paged_decode.c into one library (kernels/cpu_build.py). It computes what
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
     scores       TILE rows * max(seq_lens) float32, and
     where        max(seq_lens) int64: scratch (the caller's, so that calls from several threads at once
                  share nothing)

   A tile is TILE query rows of one sequence and one KV head: TILE / group new tokens x the KV head's
   `group` query heads (row m = token m / group, head m % group). Its keys are swept once for the scores
   and once for the values, each key read from its block where it lies and used by all TILE rows at
   once: the queries are held transposed (qt[d] = the rows' dimension d, one vector), so that a key's
   scores are head_dim vector multiply-adds, KEYS keys at a time (independent sums), with no sum across
   a vector, and likewise each output dimension (DIMS at a time). The softmax runs down the score
   columns, every row at once, with the vector expf. For 20 questions of 24 tokens on a 512-token
   prefix (benchmarks.prefix's shape) that is ~50 GFLOP/s on one core, 2.7 ms a layer; the reference's
   gather, padding and masked SDPA take 1.5x as long (and took 25x as long beside one whole prompt,
   which padded every question to its length, before it set whole prompts apart).

   The caller (kernels/cpu_extend.py) has checked shapes, dtypes, contiguity and every index. */

#include <math.h>
#include <stdint.h>
#include <string.h>

#define TILE 16  /* query rows per tile: one vector of 16 floats */
#define KEYS 8   /* keys whose scores are summed at once (independent sums: the multiply-adds overlap) */
#define DIMS 8   /* output dimensions summed at once */
#define HIDDEN (-1e30f) /* a masked score, whose probability is set to 0 (finite: -ffast-math assumes no inf) */

/* The 16 rows' values of one quantity: a vector (GCC's and Clang's vector extension; one AVX-512
   register, or two AVX2 ones, or four SSE ones: the compiler splits it where it must). */
typedef float rows_t __attribute__((vector_size(TILE * sizeof(float))));

static inline rows_t load_rows(const float *p)
{
    rows_t x;
    memcpy(&x, p, sizeof x);
    return x;
}

static inline void store_rows(float *p, rows_t x) { memcpy(p, &x, sizeof x); }

/* One tile: qt[d] holds the rows' queries' dimension d (scale folded in; rows past the real ones are
   zeros, their output dropped); the tile's first token is at position `pos0`; its keys are
   [0, num_keys), key t's row at where[t] in k and in v. Leaves ot[d] = the rows' unnormalised outputs'
   dimension d, and total = the rows' softmax sums. */
static inline __attribute__((always_inline)) void tile(
    const rows_t *qt, const float *k, const float *v, const int64_t *where, int64_t num_keys, int64_t pos0,
    const int64_t group, const int64_t head_dim, float *scores, rows_t *ot, float *total)
{
    /* scores[t * TILE + m] = q_m . k_t: per key, head_dim vector multiply-adds, KEYS keys at once */
    for (int64_t t0 = 0; t0 < num_keys; t0 += KEYS) {
        const float *kp[KEYS];
        for (int64_t c = 0; c < KEYS; c++)
            kp[c] = k + where[t0 + c < num_keys ? t0 + c : num_keys - 1];
        rows_t acc[KEYS];
        for (int64_t c = 0; c < KEYS; c++) acc[c] = (rows_t){0};
        for (int64_t d = 0; d < head_dim; d++) {
            const rows_t qd = qt[d];
            for (int64_t c = 0; c < KEYS; c++) acc[c] += qd * kp[c][d];
        }
        const int64_t n = num_keys - t0 < KEYS ? num_keys - t0 : KEYS;
        for (int64_t c = 0; c < n; c++) store_rows(scores + (t0 + c) * TILE, acc[c]);
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
    /* (one loop over the whole column block, not one per key: a loop of 16 is unrolled before it could be
       vectorized, and its expf calls stay scalar) */
#pragma omp simd
    for (int64_t j = 0; j < num_keys * TILE; j++) {
        const float x = scores[j] - top[j % TILE]; /* <= 0; clamped, so that every lane takes expf's fast path */
        const float e = expf(x > -80.0f ? x : -80.0f);
        scores[j] = scores[j] > 0.5f * HIDDEN ? e : 0.0f;
    }
    rows_t tot = {0};
    for (int64_t t = 0; t < num_keys; t++) tot += load_rows(scores + t * TILE);
    store_rows(total, tot);
    /* ot[d] = sum over t of p_t * v_t[d]: per key, a vector multiply-add per dimension, DIMS at once */
    for (int64_t d0 = 0; d0 < head_dim; d0 += DIMS) {
        const int64_t nd = head_dim - d0 < DIMS ? head_dim - d0 : DIMS;
        rows_t acc[DIMS];
        for (int64_t j = 0; j < DIMS; j++) acc[j] = (rows_t){0};
        for (int64_t t = 0; t < num_keys; t++) {
            const rows_t p = load_rows(scores + t * TILE);
            const float *vt = v + where[t] + d0;
            if (nd == DIMS)
                for (int64_t j = 0; j < DIMS; j++) acc[j] += p * vt[j];
            else
                for (int64_t j = 0; j < nd; j++) acc[j] += p * vt[j];
        }
        for (int64_t j = 0; j < nd; j++) ot[d0 + j] = acc[j];
    }
}

/* The kernel, inlined twice below: once with the lesson's model's shape as constants, once for any. */
static inline __attribute__((always_inline)) void extend(
    const float *q, const float *k, const float *v, const int32_t *block_tables, int64_t bt_stride,
    const int32_t *query_start, const int32_t *seq_lens, int64_t num_seqs, const int64_t num_heads,
    const int64_t num_kv_heads, const int64_t head_dim, int64_t block_size, float scale, float *out, float *scores,
    int64_t *where)
{
    const int64_t group = num_heads / num_kv_heads;
    const int64_t tokens = TILE / group; /* new tokens per tile (group <= TILE: the caller checked) */
    const int64_t row = num_kv_heads * head_dim;            /* floats from one token's KV to the next's */
    const int64_t page = block_size * row;                  /* floats in one block */
    rows_t qt[head_dim], ot[head_dim];
    float total[TILE];
    for (int64_t s = 0; s < num_seqs; s++) {
        const int64_t first = query_start[s], n = query_start[s + 1] - first, len = seq_lens[s];
        const int32_t *table = block_tables + s * bt_stride;
        for (int64_t t = 0, p = 0; p * block_size < len; p++) /* where each key's row lies, once per sequence */
            for (int64_t i = 0; i < block_size && t < len; i++, t++) where[t] = (int64_t)table[p] * page + i * row;
        for (int64_t kvh = 0; kvh < num_kv_heads; kvh++) {
            for (int64_t i0 = 0; i0 < n; i0 += tokens) {
                const int64_t used = (n - i0 < tokens ? n - i0 : tokens) * group;
                const int64_t pos0 = len - n + i0;
                for (int64_t d = 0; d < head_dim; d++) qt[d] = (rows_t){0};
                for (int64_t m = 0; m < used; m++) {
                    const float *qm = q + ((first + i0 + m / group) * num_heads + kvh * group + m % group) * head_dim;
                    for (int64_t d = 0; d < head_dim; d++) qt[d][m] = qm[d] * scale;
                }
                tile(qt, k + kvh * head_dim, v + kvh * head_dim, where, pos0 + used / group, pos0, group, head_dim,
                     scores, ot, total);
                for (int64_t m = 0; m < used; m++) {
                    float *om = out + ((first + i0 + m / group) * num_heads + kvh * group + m % group) * head_dim;
                    const float inv = 1.0f / total[m];
                    for (int64_t d = 0; d < head_dim; d++) om[d] = ot[d][m] * inv;
                }
            }
        }
    }
}

void kvviz_paged_extend(const float *q, const float *k, const float *v, const int32_t *block_tables, int64_t bt_stride,
                        const int32_t *query_start, const int32_t *seq_lens, int64_t num_seqs, int64_t num_heads,
                        int64_t num_kv_heads, int64_t head_dim, int64_t block_size, float scale, float *out,
                        float *scores, int64_t *where)
{
    if (head_dim == 32 && num_heads == 4 && num_kv_heads == 2)
        extend(q, k, v, block_tables, bt_stride, query_start, seq_lens, num_seqs, 4, 2, 32, block_size, scale, out,
               scores, where);
    else
        extend(q, k, v, block_tables, bt_stride, query_start, seq_lens, num_seqs, num_heads, num_kv_heads, head_dim,
               block_size, scale, out, scores, where);
}
