/* From logits to a next token: temperature, top-k, top-p, and a seeded generator. All in C so
 * that the same seed gives the same tokens in Node, in the browser and natively. */
#include "engine.h"

#include <math.h>
#include <stdlib.h>

lt_sampling_params lt_sampling_default_params(void) {
    lt_sampling_params p = {1.0f, 0, 1.0f};
    return p;
}

void lt_session_set_seed(lt_session *s, uint64_t seed) {
    if (s) s->rng = seed;
}

/* splitmix64: tiny, fast, and a full-period 64-bit generator */
static uint64_t next_u64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static const float *sort_keys; /* qsort has no context argument; the engine is single-threaded */

static int by_prob_desc(const void *a, const void *b) {
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (sort_keys[i] != sort_keys[j]) return sort_keys[i] > sort_keys[j] ? -1 : 1;
    return (i > j) - (i < j);
}

/* The checks lt_session_probs and lt_session_sample share: parameters, and logits to read. */
static int32_t check_sampling(const lt_session *s, lt_sampling_params sp) {
    if (!(sp.temperature >= 0.0f) || isinf(sp.temperature))
        return lt_fail(LT_ERR_INVALID_ARGUMENT,
                       "temperature must be a finite number >= 0 (0 is greedy), not %g",
                       (double)sp.temperature);
    if (sp.top_k < 0)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "top_k must be >= 0 (0 keeps every token), not %d", (int)sp.top_k);
    if (!(sp.top_p > 0.0f && sp.top_p <= 1.0f))
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "top_p must be in (0, 1], not %g", (double)sp.top_p);
    if (!s->pass.n_past)
        return lt_fail(LT_ERR_STATE, "no logits yet: run a forward pass first");
    return LT_OK;
}

int32_t lt_session_probs(lt_session *s, lt_sampling_params sp, float *probs) {
    if (!s || !probs) return lt_fail(LT_ERR_INVALID_ARGUMENT, "probs: missing argument");
    int32_t rc = check_sampling(s, sp);
    if (rc) return rc;
    const int32_t V = s->pass.model->n_vocab;
    const float *logits = s->pass.logits;
    const int32_t best = lt_k_argmax(logits, V);
    if (sp.temperature == 0.0f) {
        for (int32_t i = 0; i < V; i++) probs[i] = 0.0f;
        probs[best] = 1.0f;
        return LT_OK;
    }
    double sum = 0.0;
    for (int32_t i = 0; i < V; i++) {
        probs[i] = expf((logits[i] - logits[best]) / sp.temperature);
        sum += probs[i];
    }
    for (int32_t i = 0; i < V; i++) probs[i] = (float)(probs[i] / sum);
    int32_t keep = V;
    if (sp.top_k > 0 && sp.top_k < keep) keep = sp.top_k;
    if (keep == V && sp.top_p >= 1.0f) return LT_OK;

    int32_t *order = s->sample_order;
    for (int32_t i = 0; i < V; i++) order[i] = i;
    sort_keys = probs;
    qsort(order, (size_t)V, sizeof *order, by_prob_desc);
    if (sp.top_p < 1.0f) {
        double cum = 0.0;
        for (int32_t r = 0; r < keep; r++) {
            cum += probs[order[r]];
            if (cum >= sp.top_p) { keep = r + 1; break; }
        }
    }
    double kept = 0.0;
    for (int32_t r = 0; r < keep; r++) kept += probs[order[r]];
    for (int32_t r = keep; r < V; r++) probs[order[r]] = 0.0f;
    for (int32_t r = 0; r < keep; r++) probs[order[r]] = (float)(probs[order[r]] / kept);
    return LT_OK;
}

int32_t lt_session_sample(lt_session *s, lt_sampling_params sp, int32_t *out_id) {
    if (!out_id) return lt_fail(LT_ERR_INVALID_ARGUMENT, "sample: out_id is NULL");
    /* greedy: the argmax, without writing a distribution and walking it (as the sampled path
     * would pick the same token: probs is 1 there, 0 elsewhere); the generator advances as it
     * would there, so a seed gives the same tokens whatever the mix of greedy and sampled steps */
    if (s && check_sampling(s, sp) == LT_OK && sp.temperature == 0.0f) {
        (void)next_u64(&s->rng);
        *out_id = lt_k_argmax(s->pass.logits, s->pass.model->n_vocab);
        return LT_OK;
    }
    int32_t rc = lt_session_probs(s, sp, s ? s->sample_probs : NULL);
    if (rc) return rc;
    const float *p = s->sample_probs;
    const double u = (double)(next_u64(&s->rng) >> 11) * 0x1.0p-53;
    double cum = 0.0;
    int32_t last = 0;
    for (int32_t i = 0; i < s->pass.model->n_vocab; i++) {
        if (p[i] <= 0.0f) continue;
        cum += p[i];
        last = i;
        if (u < cum) break;
    }
    *out_id = last;
    return LT_OK;
}
