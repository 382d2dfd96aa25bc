/* A forward of the lesson's model in C for a small batch: a decode step, or a short prefill.

   For the lesson's small model (d_model 128, four layers) a decode step of a few sequences, or a
   typed question's prefill of a few dozen tokens on its cached prefix, is tens to hundreds of
   microseconds of arithmetic; torch's ~100 calls through Python for it (norms, matmuls, RoPE, the
   KV store, attention, the MLP) cost a millisecond or more. engine/native_step.py calls this
   instead, for a batch of at most a few dozen new tokens, on the "native" backend
   (engine/backend.py); bigger batches keep the torch forward (engine/model.py), whose blocked
   matmuls win there. It is that forward's arithmetic in another order of summation (to float
   rounding, as kernels/cpu/paged_decode.c is to the reference): RMSNorm, the stacked q/k/v
   projection, RoPE as apply_rope computes it, K and V stored at the slot mapping, paged attention
   (kvviz_paged_decode, or kvviz_paged_extend for a prefill's new tokens; compiled beside this),
   o_proj added to the residual, RMSNorm, the stacked gate/up projection, silu(gate) * up, down
   added to the residual. As there, the last layer goes on with each sequence's last row only (its
   attention a decode over the whole sequence); then the final norm and the logits.

   Layouts: every matrix row-major, float32, contiguous, as torch keeps nn.Linear's weight (out, in).
     tokens, positions, slots (rows,) int64: the new tokens, packed; query_start (seqs + 1,) int32:
       sequence s's new tokens are rows [query_start[s], query_start[s + 1]) (a decode: one each)
     block_tables (seqs, bt_stride) int32; seq_lens (seqs,) int32, counting the new tokens
     embed (vocab, d); per layer l, at layers[l * 6 + j] (addresses): j = 0 attn_norm (d),
       1 qkv (q_rows + 2 kv_rows, d), 2 o (d, heads * head_dim), 3 mlp_norm (d), 4 gate_up (2 ff, d),
       5 down (d, ff)
     k_caches[l], v_caches[l]: (num_blocks, block_size, kv_heads, head_dim)
     cos, sin: (max_seq_len, head_dim): rope_tables' [cos, cos] and [-sin, sin]
     logits (seqs, vocab); scratch: kvviz_forward_scratch(...) floats
   The caller (engine/native_step.py) has checked every shape and every index it reads through. */

#include <math.h>
#include <stdint.h>
#include <string.h>

#define EXTEND_TILE 16 /* paged_extend.c's TILE: its scores scratch is TILE rows per token */

void kvviz_paged_extend(const float *q, const float *k, const float *v, const int32_t *block_tables,
                        int64_t bt_stride, const int32_t *query_start, const int32_t *seq_lens, int64_t num_seqs,
                        int64_t num_heads, int64_t num_kv_heads, int64_t head_dim, int64_t block_size, float scale,
                        float *out, float *scores);
void kvviz_paged_decode(const float *q, const float *k, const float *v, const int32_t *block_tables,
                        int64_t bt_stride, const int32_t *seq_lens, int64_t num_seqs, int64_t num_heads,
                        int64_t num_kv_heads, int64_t head_dim, int64_t block_size, float scale, float *out,
                        float *scores);

static void rms_norm(const float *x, const float *w, float *out, int64_t rows, int64_t d, float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        float *o = out + r * d;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int64_t i = 0; i < d; i++) ss += xr[i] * xr[i];
        const float inv = 1.0f / sqrtf(ss / (float)d + eps);
#pragma omp simd
        for (int64_t i = 0; i < d; i++) o[i] = xr[i] * inv * w[i];
    }
}

/* y[r, o] (+)= x[r, :] . w[o, :] for rows r, outputs o: four rows share each weight row's loads */
static void linear(const float *x, const float *w, float *y, int64_t rows, int64_t k, int64_t n, int add)
{
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const float *x0 = x + r * k, *x1 = x0 + k, *x2 = x1 + k, *x3 = x2 + k;
        float *y0 = y + r * n, *y1 = y0 + n, *y2 = y1 + n, *y3 = y2 + n;
        for (int64_t o = 0; o < n; o++) {
            const float *wo = w + o * k;
            float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma omp simd reduction(+ : a0, a1, a2, a3)
            for (int64_t i = 0; i < k; i++) {
                a0 += x0[i] * wo[i];
                a1 += x1[i] * wo[i];
                a2 += x2[i] * wo[i];
                a3 += x3[i] * wo[i];
            }
            if (add) {
                y0[o] += a0; y1[o] += a1; y2[o] += a2; y3[o] += a3;
            } else {
                y0[o] = a0; y1[o] = a1; y2[o] = a2; y3[o] = a3;
            }
        }
    }
    for (; r < rows; r++) {
        const float *xr = x + r * k;
        float *yr = y + r * n;
        for (int64_t o = 0; o < n; o++) {
            const float *wo = w + o * k;
            float a = 0.0f;
#pragma omp simd reduction(+ : a)
            for (int64_t i = 0; i < k; i++) a += xr[i] * wo[i];
            yr[o] = add ? yr[o] + a : a;
        }
    }
}

/* apply_rope on one head: x * [cos, cos] + roll(x, half) * [-sin, sin], into out */
static inline void rope(const float *x, const float *cos, const float *sin, float *out, int64_t head_dim)
{
    const int64_t half = head_dim / 2;
    for (int64_t i = 0; i < head_dim; i++) out[i] = x[i] * cos[i] + x[(i + half) % head_dim] * sin[i];
}

int64_t kvviz_forward_scratch(int64_t rows, int64_t d, int64_t heads, int64_t kv_heads, int64_t head_dim,
                              int64_t ff, int64_t max_len)
{
    const int64_t most = heads > EXTEND_TILE ? heads : EXTEND_TILE;
    return rows * (2 * d + (heads + 2 * kv_heads) * head_dim + 2 * heads * head_dim + 3 * ff) + most * max_len;
}

void kvviz_forward(const int64_t *tokens, const int64_t *positions, const int64_t *slots, int64_t rows,
                   const int32_t *query_start, int64_t seqs, int64_t decode, const int32_t *block_tables,
                   int64_t bt_stride, const int32_t *seq_lens, const float *embed, const int64_t *layers,
                   int64_t num_layers, const int64_t *k_caches, const int64_t *v_caches, const float *cos,
                   const float *sin, const float *final_norm, const float *lm_head, int64_t vocab, int64_t d,
                   int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t ff, int64_t block_size, float eps,
                   float scale, float *logits, float *scratch)
{
    const int64_t q_rows = heads * head_dim, kv_rows = kv_heads * head_dim, qkv_n = q_rows + 2 * kv_rows;
    float *h = scratch, *xn = h + rows * d, *qkv = xn + rows * d, *q = qkv + rows * qkv_n,
          *att = q + rows * q_rows, *gu = att + rows * q_rows, *act = gu + rows * 2 * ff,
          *scores = act + rows * ff;
    for (int64_t r = 0; r < rows; r++) memcpy(h + r * d, embed + tokens[r] * d, (size_t)d * sizeof(float));
    int64_t n = rows; /* the rows going on: all of them, then at the last layer each sequence's last */
    for (int64_t l = 0; l < num_layers; l++) {
        const float *const *wl = (const float *const *)(layers + l * 6);
        float *kc = (float *)(intptr_t)k_caches[l], *vc = (float *)(intptr_t)v_caches[l];
        rms_norm(h, wl[0], xn, n, d, eps);
        linear(xn, wl[1], qkv, n, d, qkv_n, 0);
        for (int64_t r = 0; r < n; r++) {
            const float *c = cos + positions[r] * head_dim, *s = sin + positions[r] * head_dim;
            const float *src = qkv + r * qkv_n;
            for (int64_t hh = 0; hh < heads; hh++)
                rope(src + hh * head_dim, c, s, q + r * q_rows + hh * head_dim, head_dim);
            float *kslot = kc + slots[r] * kv_rows, *vslot = vc + slots[r] * kv_rows;
            for (int64_t hh = 0; hh < kv_heads; hh++)
                rope(src + q_rows + hh * head_dim, c, s, kslot + hh * head_dim, head_dim);
            memcpy(vslot, src + q_rows + kv_rows, (size_t)kv_rows * sizeof(float));
        }
        if (decode) {
            kvviz_paged_decode(q, kc, vc, block_tables, bt_stride, seq_lens, seqs, heads, kv_heads, head_dim,
                               block_size, scale, att, scores);
        } else if (l + 1 < num_layers) {
            kvviz_paged_extend(q, kc, vc, block_tables, bt_stride, query_start, seq_lens, seqs, heads, kv_heads,
                               head_dim, block_size, scale, att, scores);
        } else { /* each sequence's last row alone (moved up: its row is never below its sequence's index) */
            for (int64_t s = 0; s < seqs; s++) {
                const int64_t last = query_start[s + 1] - 1;
                memmove(q + s * q_rows, q + last * q_rows, (size_t)q_rows * sizeof(float));
                memmove(h + s * d, h + last * d, (size_t)d * sizeof(float));
            }
            n = seqs;
            kvviz_paged_decode(q, kc, vc, block_tables, bt_stride, seq_lens, seqs, heads, kv_heads, head_dim,
                               block_size, scale, att, scores);
        }
        linear(att, wl[2], h, n, q_rows, d, 1);
        rms_norm(h, wl[3], xn, n, d, eps);
        linear(xn, wl[4], gu, n, d, 2 * ff, 0);
        for (int64_t r = 0; r < n; r++) {
            const float *g = gu + r * 2 * ff, *u = g + ff;
            float *a = act + r * ff;
#pragma omp simd
            for (int64_t i = 0; i < ff; i++) a[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
        }
        linear(act, wl[5], h, n, ff, d, 1);
    }
    rms_norm(h, final_norm, xn, seqs, d, eps);
    linear(xn, lm_head, logits, seqs, d, vocab, 0);
}
