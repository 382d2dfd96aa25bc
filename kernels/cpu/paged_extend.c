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
     scores       TILE rows * max(seq_lens) float32: scratch (the caller's, so that calls from several
                  threads at once share nothing)

   A tile is TILE query rows of one sequence and one KV head: TILE / group new tokens x the KV head's
   `group` query heads (row m = token m / group, head m % group). Its keys are swept a page at a time,
   once for the scores and once for the values, each key read from its block where it lies and used by
   all TILE rows at once: the queries are held transposed (qt[d] = the rows' dimension d, two vectors of
   8), so that a key's scores are head_dim vector multiply-adds with the key's dimension broadcast, KEYS
   keys at a time (independent sums), with no sum across a vector, and likewise each output dimension
   (DIMS at a time). The vectors are 8 floats, one AVX register: KEYS x 2 sums and the 2 query vectors
   are 10 of AVX2's 16 registers (an AVX-512 core runs them as they are). Vectors of 16, as before, spilled
   on an AVX2 core: the sums and the keys' addresses went to the stack and back. The softmax runs down
   the score columns, every row at once, its exp inline (exp8: a polynomial, within 2 ulp of expf; the
   call to glibc's vector expf was a third of the kernel). For benchmarks.prefix's shape (~20 questions
   of 16-32 tokens on a 512-token prefix, beside one whole 536-token prompt, as in its first prefill
   forward) a layer takes ~5 ms on this 2-core AVX2 machine (2026-12-05, load ~5), the kernel before
   ~37 ms, the reference's gather, padding and masked SDPA ~11 ms.

   The caller (kernels/cpu_extend.py) has checked shapes, dtypes, contiguity and every index. */

#include <math.h>
#include <stdint.h>
#include <string.h>

#define TILE 16  /* query rows per tile: two vectors of 8 */
#define KEYS 4   /* keys whose scores are summed at once (independent sums: the multiply-adds overlap) */
#define DIMS 4   /* output dimensions summed at once */
#define HIDDEN (-1e30f) /* a masked score, whose probability is set to 0 (finite: -ffast-math assumes no inf) */

/* Eight rows' values of one quantity: one AVX register (GCC's and Clang's vector extension; two SSE
   registers where there is no AVX). A tile's rows are two of them, `lo` (rows 0-7) and `hi` (8-15):
   KEYS x 2 sums and a query's 2 vectors are 10 of AVX2's 16 registers, so nothing spills. */
typedef float v8 __attribute__((vector_size(8 * sizeof(float))));

static inline v8 load8(const float *p)
{
    v8 x;
    memcpy(&x, p, sizeof x);
    return x;
}

static inline void store8(float *p, v8 x) { memcpy(p, &x, sizeof x); }

typedef int32_t i8 __attribute__((vector_size(8 * sizeof(int32_t))));

/* where `keep` (a comparison's lanes: all ones or zeros), a; elsewhere b */
static inline v8 pick(i8 keep, v8 a, v8 b) { return (v8)(((i8)a & keep) | ((i8)b & ~keep)); }

/* exp(x) for x in [-80, 0], eight lanes at once, inline: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by
   Cephes' expf polynomial (within 2 ulp of expf), times 2^n made in the exponent's bits. Inline, it
   costs a few multiply-adds a lane where a call to the vector expf cost a third of the kernel. */
static inline v8 exp8(v8 x)
{
    const v8 y = x * 1.44269504088896341f - 0.5f;     /* x / ln2 - 1/2 < 0: truncating it rounds x / ln2 */
    const i8 n = __builtin_convertvector(y, i8);
    const v8 fn = __builtin_convertvector(n, v8);
    const v8 r = (x - fn * 0.693359375f) + fn * 2.12194440e-4f; /* x - n ln2, ln2 in two parts */
    v8 p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    return p * (v8)((n + 127) << 23);
}

/* One tile: qt[2d], qt[2d + 1] hold rows 0-7 and 8-15 of the queries' dimension d (scale folded in; rows
   past the real ones are zeros, their output dropped); the tile's first token is at position `pos0`; its
   keys are [0, num_keys), key t in page t / block_size of `table`, at k (and v) + table[p] * page +
   (t % block_size) * row. Leaves ot[2d], ot[2d + 1] = the rows' unnormalised outputs' dimension d, and
   total = the rows' softmax sums. */
static inline __attribute__((always_inline)) void tile(
    const v8 *qt, const float *k, const float *v, const int32_t *table, int64_t page, int64_t row,
    int64_t block_size, int64_t num_keys, int64_t pos0, const int64_t group, const int64_t head_dim,
    float *scores, v8 *ot, float *total)
{
    /* scores[t * TILE + m] = q_m . k_t: a page at a time, KEYS keys at once, each key's dimension d
       read once (a broadcast) for all 16 rows */
    for (int64_t t0 = 0, p = 0; t0 < num_keys; t0 += block_size, p++) {
        const float *kp = k + (int64_t)table[p] * page;
        const int64_t n = num_keys - t0 < block_size ? num_keys - t0 : block_size;
        float *sp = scores + t0 * TILE;
        int64_t i = 0;
        for (; i + KEYS <= n; i += KEYS) {
            const float *ki = kp + i * row;
            v8 lo[KEYS], hi[KEYS];
            for (int64_t c = 0; c < KEYS; c++) lo[c] = hi[c] = (v8){0};
            for (int64_t d = 0; d < head_dim; d++) {
                const v8 q0 = qt[2 * d], q1 = qt[2 * d + 1];
                for (int64_t c = 0; c < KEYS; c++) {
                    const float kd = ki[c * row + d];
                    lo[c] += q0 * kd;
                    hi[c] += q1 * kd;
                }
            }
            for (int64_t c = 0; c < KEYS; c++) {
                store8(sp + (i + c) * TILE, lo[c]);
                store8(sp + (i + c) * TILE + 8, hi[c]);
            }
        }
        for (; i < n; i++) {
            const float *ki = kp + i * row;
            v8 lo = {0}, hi = {0};
            for (int64_t d = 0; d < head_dim; d++) {
                lo += qt[2 * d] * ki[d];
                hi += qt[2 * d + 1] * ki[d];
            }
            store8(sp + i * TILE, lo);
            store8(sp + i * TILE + 8, hi);
        }
    }
    /* the causal mask: key t is hidden from row m when t > pos0 + m / group (only the tile's last keys) */
    for (int64_t t = pos0 + 1; t < num_keys; t++)
        for (int64_t m = 0; m < TILE; m++)
            if (t > pos0 + m / group) scores[t * TILE + m] = HIDDEN;
    /* softmax down each row's column, every row at once: exp(score - top), and its total */
    v8 top0 = load8(scores), top1 = load8(scores + 8);
    for (int64_t t = 1; t < num_keys; t++) {
        const v8 s0 = load8(scores + t * TILE), s1 = load8(scores + t * TILE + 8);
        top0 = pick(s0 > top0, s0, top0);
        top1 = pick(s1 > top1, s1, top1);
    }
    const v8 lowest = {-80.0f, -80.0f, -80.0f, -80.0f, -80.0f, -80.0f, -80.0f, -80.0f};
    const v8 zero = {0};
    v8 tot0 = {0}, tot1 = {0};
    for (int64_t t = 0; t < num_keys; t++) {
        float *st = scores + t * TILE;
        const v8 s0 = load8(st), s1 = load8(st + 8);
        const v8 x0 = s0 - top0, x1 = s1 - top1; /* <= 0; clamped to exp8's range; a hidden key's 0 */
        const v8 e0 = pick(s0 > 0.5f * HIDDEN, exp8(pick(x0 > lowest, x0, lowest)), zero);
        const v8 e1 = pick(s1 > 0.5f * HIDDEN, exp8(pick(x1 > lowest, x1, lowest)), zero);
        store8(st, e0);
        store8(st + 8, e1);
        tot0 += e0;
        tot1 += e1;
    }
    store8(total, tot0);
    store8(total + 8, tot1);
    /* ot[d] = sum over t of p_t * v_t[d]: a page at a time, DIMS dimensions at once, each value read once
       (a broadcast) for all 16 rows */
    for (int64_t d = 0; d < 2 * head_dim; d++) ot[d] = (v8){0};
    for (int64_t t0 = 0, p = 0; t0 < num_keys; t0 += block_size, p++) {
        const float *vp = v + (int64_t)table[p] * page;
        const int64_t n = num_keys - t0 < block_size ? num_keys - t0 : block_size;
        const float *sp = scores + t0 * TILE;
        int64_t d0 = 0;
        for (; d0 + DIMS <= head_dim; d0 += DIMS) {
            v8 lo[DIMS], hi[DIMS];
            for (int64_t j = 0; j < DIMS; j++) {
                lo[j] = ot[2 * (d0 + j)];
                hi[j] = ot[2 * (d0 + j) + 1];
            }
            for (int64_t i = 0; i < n; i++) {
                const v8 p0 = load8(sp + i * TILE), p1 = load8(sp + i * TILE + 8);
                const float *vi = vp + i * row + d0;
                for (int64_t j = 0; j < DIMS; j++) {
                    lo[j] += p0 * vi[j];
                    hi[j] += p1 * vi[j];
                }
            }
            for (int64_t j = 0; j < DIMS; j++) {
                ot[2 * (d0 + j)] = lo[j];
                ot[2 * (d0 + j) + 1] = hi[j];
            }
        }
        for (; d0 < head_dim; d0++)
            for (int64_t i = 0; i < n; i++) {
                const float vd = vp[i * row + d0];
                ot[2 * d0] += load8(sp + i * TILE) * vd;
                ot[2 * d0 + 1] += load8(sp + i * TILE + 8) * vd;
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
    const int64_t tokens = TILE / group; /* new tokens per tile (group <= TILE: the caller checked) */
    const int64_t row = num_kv_heads * head_dim;            /* floats from one token's KV to the next's */
    const int64_t page = block_size * row;                  /* floats in one block */
    v8 qt[2 * head_dim], ot[2 * head_dim];
    float total[TILE], inv[TILE], rows[TILE];
    for (int64_t s = 0; s < num_seqs; s++) {
        const int64_t first = query_start[s], n = query_start[s + 1] - first, len = seq_lens[s];
        const int32_t *table = block_tables + s * bt_stride;
        for (int64_t kvh = 0; kvh < num_kv_heads; kvh++) {
            for (int64_t i0 = 0; i0 < n; i0 += tokens) {
                const int64_t used = (n - i0 < tokens ? n - i0 : tokens) * group;
                const int64_t pos0 = len - n + i0;
                for (int64_t d = 0; d < head_dim; d++) {
                    for (int64_t m = 0; m < TILE; m++)
                        rows[m] = m < used ? q[((first + i0 + m / group) * num_heads + kvh * group + m % group)
                                               * head_dim + d] * scale : 0.0f;
                    qt[2 * d] = load8(rows);
                    qt[2 * d + 1] = load8(rows + 8);
                }
                tile(qt, k + kvh * head_dim, v + kvh * head_dim, table, page, row, block_size, pos0 + used / group,
                     pos0, group, head_dim, scores, ot, total);
                for (int64_t m = 0; m < TILE; m++) inv[m] = 1.0f / total[m];
                for (int64_t d = 0; d < head_dim; d++) {
                    store8(rows, ot[2 * d]);
                    store8(rows + 8, ot[2 * d + 1]);
                    for (int64_t m = 0; m < used; m++)
                        out[((first + i0 + m / group) * num_heads + kvh * group + m % group) * head_dim + d] =
                            rows[m] * inv[m];
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
