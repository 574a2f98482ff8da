/* The compiled exact multiple-choice knapsack kernel (no count limit), with the tie rule.
 *
 * The same mathematics as reduce.py and core.py, in exact integer arithmetic:
 *
 *   1. Each row's upper convex hull over (tokens, value) with delete at (0, 0).
 *   2. The LP split: the hull increment where increments taken in decreasing efficiency
 *      first overflow the capacity, found by weighted selection (sampled pivot pairs, then
 *      quickselect; expected linear time). Its efficiency is the multiplier lambda = p / q,
 *      kept as a fraction, so every bound below is an exact integer comparison (__int128),
 *      never a float with a tolerance. The LP floor (every row at its heaviest hull vertex
 *      whose increments are strictly more efficient than lambda, then increments exactly as
 *      efficient while they fit) is feasible and is each row's best level at lambda.
 *   3. Phase 1, the optimum (V*, W*): value first, then fewest tokens. Rows are added in
 *      order of their gap (how much value at lambda a row loses by leaving its floor level),
 *      as in Pisinger's expanding core; each row joins reduced by the current bound (an option
 *      whose Lagrangian bound is below the incumbent never enters); states are Pareto sets of
 *      (tokens, value) changes from the floor; a state is dropped when Pisinger's bound (see
 *      Ranking) says no completion can beat the incumbent, or tie it with fewer tokens. The
 *      first incumbent is the best of two greedy fills and a tie fill (a subset sum over the
 *      options exactly as good at lambda as the floor's, for the room the floor leaves: where it
 *      fills the room exactly, as on Pisinger's correlated classes, it is worth the bound). Where
 *      none reaches the bound, the tied fill finds the best allocation of tied options (a subset
 *      sum of the tokens moved from each row's lightest or heaviest tied option) and proves it
 *      when every untied option loses more than the bound's slack there (a budget just below
 *      every heaviest level: the search could not prune a state). The capacity is first rounded
 *      down to a multiple of the gcd of the usable tokens. The search stops when no state is
 *      left or the next row's gap exceeds the gap between the bound and the incumbent: no row
 *      outside the core can change, which is the proof of optimality. Where the optimum is far
 *      below the bound with every row's gap inside it (a budget just below the sum of the lightest
 *      levels), the search, once large, tightens each state's bound: a whole option must move
 *      (Moves), the exact LP of the rows outside the search (Side), and the values' gcd.
 *   4. Phase 2, the tie rule among allocations worth (V*, W*): levels that cannot be in
 *      such an allocation are removed by the Lagrangian bound at lambda (this is the
 *      reduction handed to CP-SAT and to explain). The rows left with several levels
 *      ("free") get their levels first to last, each at the highest fidelity that still
 *      completes (V*, W*), by an expanding tail: the first rows take the "lead" (the
 *      highest-fidelity level the bound allows given the rows before), and a Pareto DP over
 *      the last rows, grown by half at a time, must hit the rest exactly; it witnesses that
 *      the lead completes, and its layers rebuild the tail. On Pisinger's correlated classes
 *      the tail is tens of rows where the whole DP would be thousands. Where every kept option
 *      ties at lambda (the optimum is worth the bound, as on those classes), a set of rows'
 *      value follows from its tokens and the tail's layers are bitsets of token sums (weakly
 *      correlated 100,000: a tail of 7,513 rows). If the DP would exceed its state limit, the
 *      phase 1 optimum is returned and the result says the third tie rule was not applied.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
/* (int64_t)rint(x) in one instruction: cvtsd2si rounds in the current mode as rint does, and
   returns the same integer indefinite (INT64_MIN) as the conversion of rint's result where x is
   NaN or out of range */
static inline int64_t round_to_int64(double x) { return _mm_cvtsd_si64(_mm_set_sd(x)); }
#else
static inline int64_t round_to_int64(double x) { return (int64_t)rint(x); }
#endif
/* x86-64 with GCC or Clang: the AVX2 and AVX-512 passes, each taken where the CPU has it (asked at run time) */
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define X86_VECTORS 1
#include <immintrin.h>
#endif

typedef __int128 i128;

#define PHASE1_LIMIT 10000000  /* states generated before the search gives up (~0.1 s) */
#define MOVES_AFTER 65536      /* states generated before the search tightens its bound (Moves) */
#define PHASE2_LIMIT 2000000   /* states generated before the tie-rule DP gives up */
#define PHASE2_BOUNDED 60000000 /* ... unless its table bounds it by this many (~0.3 s) */
#define PHASE2_WIDE 40000000   /* ... or no dense DP can order the ties (weakly correlated 5,000-20,000 rows
                                  near the lightest levels' sum: 5-36 million, 0.07-0.4 s) */
#define FILL_ROOM 65536        /* the tie fill's DP: room left by the floor, at most */
#define FILL_SLACK 2048        /* ... and how far its partial sums may stray outside [0, room] */
#define FILL_WORK 4000000      /* ... and bitset words it writes */
#define LOSS_WORK 16000000     /* the loss fill's bitset words written, at most */
#define BITSET_WORDS ((size_t)1 << 22)  /* the tied tail's bitset layers, at most (32 MB) */

typedef struct { int64_t w, v; int32_t parent; int32_t option; } State;
typedef struct { int64_t w, v; } Pair;
typedef struct { int64_t ds, dv; double eff; } Increment;  /* eff = dv / ds, rounded */
typedef struct { double gap; int64_t row; } Candidate;

typedef struct { void *a; size_t len, cap, size; } Vec;

static int vec_reserve(Vec *vec, size_t more) {
    if (vec->len + more <= vec->cap) return 0;
    size_t cap = vec->cap ? vec->cap : 1024;
    while (cap < vec->len + more) cap *= 2;
    void *a = realloc(vec->a, cap * vec->size);
    if (!a) return -1;
    vec->a = a;
    vec->cap = cap;
    return 0;
}

/* a is more efficient than b: +1; equal: 0; less: -1 (exact: ds > 0) */
static int compare_efficiency(const Increment *a, const Increment *b) {
    /* rounding is monotone: different rounded efficiencies order the exact ones */
    if (a->eff != b->eff) return a->eff > b->eff ? 1 : -1;
    i128 l = (i128)a->dv * b->ds, r = (i128)b->dv * a->ds;
    return (l > r) - (l < r);
}

/* dv * q against p * ds, exactly: +1, 0, -1 (in 64 bits where neither product overflows) */
static inline int compare_products(int64_t dv, int64_t q, int64_t p, int64_t ds) {
    int64_t l, r;
    if (__builtin_mul_overflow(dv, q, &l) | __builtin_mul_overflow(p, ds, &r)) {
        i128 a = (i128)dv * q, b = (i128)p * ds;
        return (a > b) - (a < b);
    }
    return (l > r) - (l < r);
}

static inline Increment increment(int64_t ds, int64_t dv) {
    Increment x = {ds, dv, (double)dv / (double)ds};
    return x;
}

#ifndef SPLIT_SAMPLES
#define SPLIT_SAMPLES 64  /* the split's sample of increments */
#define SPLIT_MARGIN 4    /* ... and how many of them either side of the estimate bound the band */
#endif
#define SPLIT_NARROW 512     /* rounds of two sampled pivots while the range holds more than this many
                                 increments (quickselect's compares go either way at random: a mispredicted
                                 branch each; the rounds' passes have none) */
#define SPLIT_WIDE 65536      /* past this many increments in the range: */
#define SPLIT_WIDE_SAMPLES 256 /* a larger sample (the tokens of memory-shaped rows' increments spread */
#define SPLIT_WIDE_MARGIN 12   /* over 1 to 2,000: 64 missed the split there, a second pass over 70 %) */

static uint64_t next_random(uint64_t *s) {
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}

/* Which side of two pivots (top more efficient than bottom) an increment is on: 0 above top,
   1 between them (either included), 2 below bottom. The rounded efficiencies decide unless one
   equals a pivot's (rare: then the exact comparison), so the passes below run without the
   mispredicted branches a comparison per increment costs. */
static inline int group_of(const Increment *x, const Increment *top, const Increment *bottom) {
    double e = x->eff;
    if (e != top->eff && e != bottom->eff) return (e <= top->eff) + (e < bottom->eff);
    return compare_efficiency(x, top) > 0 ? 0 : compare_efficiency(x, bottom) >= 0 ? 1 : 2;
}

/* The increment at which taking increments in decreasing efficiency first exceeds cap (total:
   their summed tokens; band: scratch for m increments). Returns 0 when everything fits; else
   *above is the tokens of the increments strictly more efficient than the split. */
static int split_increment(Increment *inc, size_t m, int64_t cap, int64_t total, Increment *band, Increment *split,
                           int64_t *above) {
    size_t lo = 0, hi = m;
    int64_t taken = 0;
    uint64_t seed = 0x9E3779B97F4A7C15ULL;  /* fixed: the same work on every run */
    /* while the range is large: two pivots around the split's position in a sorted sample, one
       pass that sums the weight above them and copies out the band between them (usually
       where the split is: the next round works on a few percent of the range) */
    while (hi - lo > SPLIT_NARROW) {
        Increment sample[SPLIT_WIDE_SAMPLES];
        size_t len = hi - lo;
        int samples = len > SPLIT_WIDE ? SPLIT_WIDE_SAMPLES : SPLIT_SAMPLES;
        int margin = len > SPLIT_WIDE ? SPLIT_WIDE_MARGIN : SPLIT_MARGIN;
        for (int a = 0; a < samples; a++) {
            Increment x = inc[lo + next_random(&seed) % len];
            int b = a - 1;
            while (b >= 0 && compare_efficiency(&sample[b], &x) < 0) { sample[b + 1] = sample[b]; b--; }
            sample[b + 1] = x;
        }
        double sample_w = 0.0, need = (double)(cap - taken), seen = 0.0;
        for (int a = 0; a < samples; a++) sample_w += (double)sample[a].ds;
        int at = samples - 1;
        for (int a = 0; a < samples; a++) {
            seen += (double)sample[a].ds;
            if (seen * (double)total / sample_w > need) { at = a; break; }
        }
        Increment top = sample[at >= margin ? at - margin : 0];
        Increment bottom = sample[at + margin <= samples - 1 ? at + margin : samples - 1];
        /* a band of one efficiency (a block of ties around the split, the correlated classes) keeps most
           of a smaller range: quickselect's three-way pass takes such a block at once */
        if (len <= 4096 && compare_efficiency(&top, &bottom) == 0) break;
        int64_t w_above = 0, w_band = 0;
        size_t n_above = 0, n_band = 0, n_below = 0;
        /* without branches (the groups come in no order): the band copied from the front of
           `band`, the increments above it from the back, in reverse, and those below it to the
           front of the range in place (behind the pass: n_below <= i - lo), for the round's choice */
        for (size_t i = lo; i < hi; i++) {
            Increment x = inc[i];
            int g = group_of(&x, &top, &bottom);
            uint64_t is_above = (uint64_t)(g == 0), is_band = (uint64_t)(g == 1);
            band[n_band] = x;  /* kept only when it is in the band */
            band[len - 1 - n_above] = x;  /* kept only when it is above (n_band + n_above <= i - lo) */
            inc[lo + n_below] = x;  /* kept only when it is below */
            n_below += g == 2;
            w_above += (int64_t)((uint64_t)x.ds & (0 - is_above));
            n_above += is_above;
            w_band += (int64_t)((uint64_t)x.ds & (0 - is_band));
            n_band += is_band;
        }
        int group;
        if (taken + w_above > cap) group = 0, total = w_above;
        else if (taken + w_above + w_band > cap) group = 1, taken += w_above, total = w_band;
        else group = 2, taken += w_above + w_band, total -= w_above + w_band;
        size_t kept = group == 1 ? n_band : group == 0 ? n_above : n_below;
        if (group == 1) memcpy(inc + lo, band, n_band * sizeof(Increment));
        else if (group == 0)
            for (size_t a = 0; a < n_above; a++) inc[lo + a] = band[len - 1 - a];  /* in their order */
        hi = lo + kept;  /* (group 2: already in place) */
        /* no progress (a block of equal efficiencies): quickselect, on the range as the copies above left it
           (not before them: the pass's in-place writes of the increments below have already overwritten it) */
        if (kept == len) break;
    }
    while (hi > lo) {
        Increment pivot = inc[lo + next_random(&seed) % (hi - lo)];
        size_t i = lo, gt = lo, lt = hi;
        int64_t w_gt = 0, w_eq = 0;
        while (i < lt) {
            int c = compare_efficiency(&inc[i], &pivot);
            if (c > 0) {
                Increment t = inc[gt]; inc[gt] = inc[i]; inc[i] = t;
                w_gt += inc[gt].ds;
                gt++; i++;
            } else if (c < 0) {
                lt--;
                Increment t = inc[lt]; inc[lt] = inc[i]; inc[i] = t;
            } else {
                w_eq += inc[i].ds;
                i++;
            }
        }
        if (taken + w_gt > cap) { hi = gt; continue; }
        if (taken + w_gt + w_eq > cap) { *split = pivot; *above = taken + w_gt; return 1; }
        taken += w_gt + w_eq;
        lo = lt;
    }
    return 0;
}

static int compare_rows(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int compare_candidates(const void *a, const void *b) {
    const Candidate *x = a, *y = b;
    if (x->gap != y->gap) return x->gap < y->gap ? -1 : 1;
    /* equal gaps in a scrambled (but fixed) order: rows that can only give tokens back and rows
       that can only take more usually come in input-order runs (the tie fill), and the search
       needs both kinds early to reach the capacity exactly */
    uint64_t kx = (uint64_t)x->row * 0x9E3779B97F4A7C15ULL, ky = (uint64_t)y->row * 0x9E3779B97F4A7C15ULL;
    return (kx > ky) - (kx < ky);
}

static void swap_candidates(Candidate *a, Candidate *b) { Candidate t = *a; *a = *b; *b = t; }

/* Rearranges a[0..len) so that a[0..m) are its m smallest (quickselect, expected linear). */
static void select_smallest(Candidate *a, size_t len, size_t m) {
    size_t lo = 0, hi = len;
    uint64_t seed = 0x2545F4914F6CDD1DULL;
    while (hi - lo > 1) {
        Candidate pivot = a[lo + next_random(&seed) % (hi - lo)];
        size_t i = lo, lt = lo, gt = hi;
        while (i < gt) {
            int c = compare_candidates(&a[i], &pivot);
            if (c < 0) swap_candidates(&a[lt++], &a[i++]);
            else if (c > 0) swap_candidates(&a[i], &a[--gt]);
            else i++;
        }
        if (m <= lt) hi = lt;
        else if (m <= gt) return;
        else lo = gt;
    }
}

/* select_smallest where every gap in a[0..len) is the same (Pisinger's correlated classes: every row
   tied, tens of thousands of them): the m smallest are those of the least scrambles, found by one pass
   with a max-heap of m scrambles (most rows turned away by one comparison, where quickselect's
   comparisons went either way at random) and moved to a[0..m), the rows they displace into their
   places. The rest keep their input order, where quickselect leaves them scrambled: the tie fill walks
   them for rows of either kind, and past about 16,000 candidates its longer walks along input-order runs
   cost more than the selection saves (strongly correlated 100,000 records: 1.04-1.10x the time; 10,000:
   0.84-0.95); there the caller riffles the rest (any_len; see riffle). Returns 0 (nothing moved) where
   two gaps differ, m is past the heap's room or len past TIED_SELECT_ROWS (unless any_len). */
#define TIED_SELECT 1024
#define TIED_SELECT_ROWS 16384
static int select_tied(Candidate *a, size_t len, size_t m, int any_len) {
    if (m == 0 || m > TIED_SELECT || m >= len || (len > TIED_SELECT_ROWS && !any_len)) return 0;
    for (size_t c = 1; c < len; c++)
        if (a[c].gap != a[0].gap) return 0;
    uint64_t key[TIED_SELECT];
    size_t pos[TIED_SELECT], h = 0;
    for (size_t c = 0; c < len; c++) {
        uint64_t x = (uint64_t)a[c].row * 0x9E3779B97F4A7C15ULL;  /* (compare_candidates' scramble) */
        size_t at;
        if (h < m) {  /* fill: sift up */
            at = h++;
            while (at > 0 && key[(at - 1) / 2] < x) {
                key[at] = key[(at - 1) / 2]; pos[at] = pos[(at - 1) / 2];
                at = (at - 1) / 2;
            }
        } else {
            if (x >= key[0]) continue;
            at = 0;  /* replace the largest: sift down */
            for (;;) {
                size_t l = 2 * at + 1, r = l + 1, top = l;
                if (l >= m) break;
                if (r < m && key[r] > key[l]) top = r;
                if (key[top] <= x) break;
                key[at] = key[top]; pos[at] = pos[top];
                at = top;
            }
        }
        key[at] = x; pos[at] = c;
    }
    /* the chosen positions in order; the rows in front that were not chosen go where chosen ones were */
    for (size_t j = 1; j < m; j++) {
        size_t x = pos[j], b = j;
        while (b > 0 && pos[b - 1] > x) { pos[b] = pos[b - 1]; b--; }
        pos[b] = x;
    }
    Candidate chosen[TIED_SELECT];
    for (size_t j = 0; j < m; j++) chosen[j] = a[pos[j]];
    size_t back = 0, front = 0;
    while (back < m && pos[back] < m) back++;  /* pos[back..m): chosen rows past the front */
    for (size_t f = 0; f < m; f++) {
        if (front < m && pos[front] == f) { front++; continue; }
        a[pos[back++]] = a[f];
    }
    memcpy(a, chosen, m * sizeof(Candidate));
    return 1;
}

/* a[0..len) riffled into spare from RIFFLE_WAYS equal runs, one candidate of each in turn: input-order runs
   of either kind of row (the tie fill's, the greedy fill's) come interleaved, by sequential reads, where
   quickselect's scrambling cost 8-25 cycles a candidate (strongly / subset-sum 20,000-50,000 records:
   0.76-0.90 of the time with select_tied and this; 100,000 within noise) */
#define RIFFLE_WAYS 8
static int riffle_tied = 1;  /* tests switch it off (kernel.riffle): quickselect then orders the candidates */
static void riffle(const Candidate *a, size_t len, Candidate *spare) {
    size_t part = (len + RIFFLE_WAYS - 1) / RIFFLE_WAYS, out = 0;
    for (size_t j = 0; j < part; j++)
        for (size_t w = 0; w < RIFFLE_WAYS; w++) {
            size_t at = w * part + j;
            if (at < len) spare[out++] = a[at];
        }
}

/* Sorts the next chunk of cand[sorted..end), smallest gaps first; returns the end of the sorted prefix. */
#define FIRST_CHUNK 64  /* the candidates sorted first; each later chunk doubles the sorted prefix */
static size_t sort_chunk(Candidate *cand, size_t sorted, size_t end) {
    size_t remaining = end - sorted, chunk = sorted < FIRST_CHUNK ? FIRST_CHUNK : sorted;
    if (remaining > chunk) {
        if (!select_tied(cand + sorted, remaining, chunk, 0)) select_smallest(cand + sorted, remaining, chunk);
    } else chunk = remaining;
    qsort(cand + sorted, chunk, sizeof(Candidate), compare_candidates);
    return sorted + chunk;
}

/* Drops candidates whose gap exceeds `limit` (they can no longer change), then sorts the next
   chunk of the rest (sort_chunk). */
static size_t extend_sorted(Candidate *cand, size_t sorted, size_t *n_cand, const i128 *gap, i128 limit) {
    size_t end = sorted;
    for (size_t c = sorted; c < *n_cand; c++)
        if (gap[cand[c].row] <= limit) cand[end++] = cand[c];
    *n_cand = end;
    return sort_chunk(cand, sorted, end);
}


/* Pisinger's bound for the rows the search has not taken yet: each sits at its reference
   level R, which stays its best level for every multiplier between the efficiency of its next
   hull increment (lo) and of the increment into R (hi). With lo = the largest such "next" and
   hi = the smallest such "into R" over those rows, a completion that adds d tokens to them
   adds at most lo * d value (d >= 0) or loses at least hi * |d| (d < 0): much tighter than the
   single multiplier once the rows nearest the split are in the search. The extremes are kept
   for the RANKED rows with the largest (smallest) efficiencies; past them, the exact extreme of
   the rows outside the ranking (all of them tie it on Pisinger's correlated classes, where the
   multiplier in its place left every state of a budget below the lightest levels alive). */
#define RANKED 128
typedef struct {
    Candidate rank[RANKED];  /* gap field: the key, -efficiency (next) or efficiency (into R) */
    Increment inc[RANKED];
    size_t len, offered;
    size_t first;            /* once sorted (rank_finish): no ranked row before it is outside the search */
    int largest;             /* 1: "next" increments (the extreme is the most efficient) */
    int has_outside;
    Increment outside;       /* the exact extreme of the increments turned away or evicted */
} Ranking;

/* An increment leaves (or never enters) the ranking: the most extreme of those is kept exactly,
   so the bound over rows outside the ranking needs no multiplier (see extreme). */
static inline void rank_outside(Ranking *rk, const Increment *x) {
    if (!rk->has_outside || (rk->largest ? compare_efficiency(x, &rk->outside) > 0
                                         : compare_efficiency(x, &rk->outside) < 0)) {
        rk->outside = *x;
        rk->has_outside = 1;
    }
}

/* The ranking's order: smaller keys first, then earlier rows (a total order: which rows are ranked does
   not depend on the order they are offered in, so the band, which offers its rows first, ranks the rows
   every hull ranks). Whether (key, row) comes after c. */
static inline int rank_after(double key, Py_ssize_t row, const Candidate *c) {
    return key > c->gap || (key == c->gap && row > c->row);
}

/* Offers a row to the ranking, which keeps the RANKED first in that order (a max-heap while filling:
   most rows are turned away by one comparison). */
static void rank_offer(Ranking *rk, double key, Py_ssize_t row, Increment inc) {
    rk->offered++;
    size_t at;
    if (rk->len < RANKED) {  /* sift up: the parents after the new row move down into its hole */
        at = rk->len++;
        while (at > 0 && rank_after(key, row, &rk->rank[(at - 1) / 2])) {
            rk->rank[at] = rk->rank[(at - 1) / 2];
            rk->inc[at] = rk->inc[(at - 1) / 2];
            at = (at - 1) / 2;
        }
        rk->rank[at] = (Candidate){key, row};
        rk->inc[at] = inc;
        return;
    }
    if (rank_after(key, row, &rk->rank[0])) {
        /* usually far from the outside extreme in floating point: no exact comparison */
        if (!rk->has_outside || key <= (rk->largest ? -rk->outside.eff : rk->outside.eff)) rank_outside(rk, &inc);
        return;
    }
    rank_outside(rk, &rk->inc[0]);
    at = 0;  /* sift down from the root: the later child moves up into the hole while it comes after the row */
    for (;;) {
        size_t l = 2 * at + 1, r = l + 1, top = l;
        if (l >= rk->len) break;
        if (r < rk->len && rank_after(rk->rank[r].gap, rk->rank[r].row, &rk->rank[l])) top = r;
        if (!rank_after(rk->rank[top].gap, rk->rank[top].row, &(Candidate){key, row})) break;
        rk->rank[at] = rk->rank[top];
        rk->inc[at] = rk->inc[top];
        at = top;
    }
    rk->rank[at] = (Candidate){key, row};
    rk->inc[at] = inc;
}

/* rank_offer, with its usual outcome (turned away, and not past the outside extreme in floating
   point) decided here without a call */
static inline void rank_offer_row(Ranking *rk, double key, Py_ssize_t row, const Increment *inc) {
    if (rk->len == RANKED && rank_after(key, row, &rk->rank[0]) && rk->has_outside
        && key > (rk->largest ? -rk->outside.eff : rk->outside.eff)) {
        rk->offered++;
        return;
    }
    rank_offer(rk, key, row, *inc);
}

typedef struct { Candidate c; Increment inc; } RankedRow;

/* Sorts the ranked rows by key, smallest first (their increments move with them): a merge sort with
   the comparison inlined (qsort's calls were a few percent of a 1,000-row solve); the order is total
   (distinct rows), so it is the one qsort gives. */
static void rank_finish(Ranking *rk) {
    RankedRow rows[RANKED], spare[RANKED], *from = rows, *to = spare;
    size_t len = rk->len;
    for (size_t a = 0; a < len; a++) rows[a] = (RankedRow){rk->rank[a], rk->inc[a]};
    for (size_t width = 1; width < len; width *= 2) {
        for (size_t lo = 0; lo < len; lo += 2 * width) {
            size_t mid = lo + width < len ? lo + width : len, hi = lo + 2 * width < len ? lo + 2 * width : len;
            size_t a = lo, b = mid, out = lo;
            while (a < mid && b < hi) to[out++] = compare_candidates(&from[b].c, &from[a].c) < 0 ? from[b++] : from[a++];
            while (a < mid) to[out++] = from[a++];
            while (b < hi) to[out++] = from[b++];
        }
        RankedRow *t = from; from = to; to = t;
    }
    for (size_t a = 0; a < len; a++) { rk->rank[a] = from[a].c; rk->inc[a] = from[a].inc; }
    rk->first = 0;
}

/* The extreme efficiency over the rows not yet searched, `largest` for "next" increments: the
   ranked rows' not yet searched, or the exact extreme of those outside the ranking (which may
   include searched rows: a bound no less safe, and tighter than the multiplier). Returns -1
   when no row is left at all. The ranked rows are sorted extreme first (rank_finish) and rows only
   join the search, so the extreme is among the first not searched and those of its key (rounding
   is monotone: a later key is a less extreme efficiency), the first of the exactly equal. */
static int extreme(Ranking *rk, const unsigned char *searched, int largest, Increment *out) {
    int found = 0;
    while (rk->first < rk->len && searched[rk->rank[rk->first].row]) rk->first++;
    for (size_t a = rk->first; a < rk->len && rk->rank[a].gap == rk->rank[rk->first].gap; a++) {
        if (searched[rk->rank[a].row]) continue;
        int better = !found || (largest ? compare_efficiency(&rk->inc[a], out) > 0
                                        : compare_efficiency(&rk->inc[a], out) < 0);
        if (better) { *out = rk->inc[a]; found = 1; }
    }
    if (rk->has_outside && (!found || (largest ? compare_efficiency(&rk->outside, out) > 0
                                               : compare_efficiency(&rk->outside, out) < 0))) {
        *out = rk->outside;
        found = 1;
    }
    return found ? 1 : -1;
}

typedef struct {
    Py_ssize_t n, k;
    const int64_t *tokens, *values;
    const uint8_t *usable;
    int64_t capacity;
    int64_t p, q;     /* lambda = p / q */
    int at_once;      /* tests: the search tightens its bound from the first state (MOVES_AFTER), and the
                         count cut is tried on the first incumbent */
    int banded;       /* the LP split from a band of rows (see banded_split); the hull counts are not taken.
                         4: the tied split only, from a small sample (fewer rows). Tests: 2 takes the band
                         even where many rows are in it, 3 a band one sample increment wide */
    uint64_t width;   /* the OR of every usable level's tokens and values (the scaling's, or raw_width; at
                         least each row's row_width), or UINT64_MAX: rows are then asked one by one */
    int shortcut;     /* where the budget binds no row, the answer without search (fits_all; before the
                         hulls where fits_likely says so, and their counts are then not taken) */
    size_t state_limit; /* states the search may generate before the solve gives up, below its own limit (a
                           count limit's prices); 0: its own limit. (The tie rule keeps its limits: a priced
                           optimum must come in the tie rule's order.) */
} Problem;

/* option o of row i: a level 0..k-1, or k = delete */
static inline int option_ok(const Problem *P, Py_ssize_t i, Py_ssize_t o) {
    return o == P->k || P->usable[i * P->k + o];
}
static inline int64_t option_w(const Problem *P, Py_ssize_t i, Py_ssize_t o) {
    return o == P->k ? 0 : P->tokens[i * P->k + o];
}
static inline int64_t option_v(const Problem *P, Py_ssize_t i, Py_ssize_t o) {
    return o == P->k ? 0 : P->values[i * P->k + o];
}
static inline i128 reduced(const Problem *P, int64_t w, int64_t v) {
    return (i128)P->q * v - (i128)P->p * w;
}

/* A completion of a search state (value a, tokens w; the rows outside the search at their
   reference) can improve on the incumbent (value, tokens): reach a higher value, or the same
   value with fewer tokens. Outside rows add at most lo * d value for d >= 0 added tokens and
   lose at least hi * |d| for d < 0 (see Ranking). */
static int may_improve(int64_t a, int64_t w, int64_t capacity, const Increment *lo, const Increment *hi,
                       int hi_infinite, int64_t value, int64_t tokens, int64_t step) {
    int64_t room = capacity - w;
    i128 gain;  /* the bound on the value, times the multiplier's denominator */
    const Increment *m;
    if (room >= 0) m = lo;
    else if (hi_infinite) return 0;
    else m = hi;
    gain = (i128)m->ds * a + (i128)m->dv * room;
    if (gain < (i128)m->ds * value) return 0;
    if (gain >= (i128)m->ds * ((i128)value + step)) return 1;  /* step: the values' gcd (see value_step) */
    /* worth at most `value`: a completion worth it needs d >= (value - a) / lambda tokens */
    int64_t need = value - a;
    int64_t fewer = tokens - w;  /* tokens the outside rows may add and still use fewer */
    if (need >= 0) {
        if (lo->dv == 0) return fewer > 0;
        return (i128)lo->ds * need < (i128)lo->dv * fewer;
    }
    if (hi_infinite) return fewer > 0;
    return (i128)hi->ds * need < (i128)hi->dv * fewer;
}

/* Pisinger's bound takes the rows outside the search as continuous; where a completion must move
   a whole option, it is tighter. Over a set S of rows at their reference, with L at least every
   "next" efficiency and H at most every "into R" efficiency in S, a completion that sheds d > 0
   tokens moves options down, at least ceil(d / D) of them (D: the most tokens a down move in S
   gives back; eta: the least of loss - L * tokens over S's down moves), and changes the value by
   at most -L * d - ceil(d / D) * eta; one within room >= 0 tokens gains at most
   max(0, H * room - theta) (theta: the least of H * tokens - gain over S's up moves). On a budget
   just below the sum of the lightest levels (strongly correlated) every completion of a state over
   the capacity deletes a record and loses its worth at L = 1, which the continuous bound hides:
   without this test the search kept a state for every token of the window, all rows long.
   S is the rows outside the search when computed: it only shrinks, so the test stays valid. */
typedef struct {
    Increment L, H;
    i128 eta, theta;  /* over L.ds and H.ds */
    int64_t most_down;
    int has_down, has_up, ready;
    size_t at;        /* states generated when computed */
} Moves;

static void moves_compute(Moves *M, const Problem *P, const int32_t *floor_opt, const unsigned char *searched,
                          const Increment *lo, const Increment *hi, int hi_infinite, size_t generated) {
    Py_ssize_t n = P->n, k = P->k;
    M->L = *lo; M->H = *hi;
    M->has_down = M->has_up = 0;
    M->eta = M->theta = 0;
    M->ready = 1;
    M->at = generated;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (searched[i]) continue;
        int32_t f = floor_opt[i];
        int64_t fw = option_w(P, i, f), fv = option_v(P, i, f);
        for (Py_ssize_t o = 0; o <= k; o++) {
            if (o == f || !option_ok(P, i, o)) continue;
            int64_t d = option_w(P, i, o) - fw, g = option_v(P, i, o) - fv;
            if (d < 0) {
                i128 e = (i128)M->L.ds * (-g) - (i128)M->L.dv * (-d);
                if (!M->has_down || e < M->eta) M->eta = e;
                if (!M->has_down || -d > M->most_down) M->most_down = -d;
                M->has_down = 1;
            } else if (d > 0 && !hi_infinite) {
                i128 t = (i128)M->H.dv * d - (i128)M->H.ds * g;
                if (!M->has_up || t < M->theta) M->theta = t;
                M->has_up = 1;
            }
        }
    }
    if (hi_infinite) M->has_up = 0;  /* no down move: the continuous bound is all there is */
}

/* A completion of the state (value a, tokens w) may reach `value` (see Moves). */
static inline int moves_may_reach(const Moves *M, int64_t a, int64_t w, int64_t capacity, i128 value) {
    int64_t room = capacity - w;
    if (room < 0) {
        if (!M->has_down) return 0;
        int64_t moved = (-room - 1) / M->most_down + 1;  /* down moves, at least (at most 2**20 counted) */
        if (moved > ((int64_t)1 << 20)) moved = (int64_t)1 << 20;
        return (i128)M->L.ds * a - (i128)M->L.dv * (-room) - moved * M->eta >= (i128)M->L.ds * value;
    }
    if (a >= value || !M->has_up) return 1;
    return (i128)M->H.ds * a + (i128)M->H.dv * room - M->theta >= (i128)M->H.ds * value;
}

/* The LP of the rows outside the search, exactly: where many rows' efficiencies lie near the
   multiplier (weakly correlated), Pisinger's single extreme stays near it and the states of a
   window of thousands of tokens either side of the capacity all survive; the hull increments
   of the rows outside the search, taken in order of efficiency (up from each row's reference,
   most efficient first; down, least efficient first: each row's own increments come in its hull
   order), bound what a completion gains with `room` tokens or loses shedding d, and fall off
   within a few dozen increments. The sorted increments are built once (rows searched later are
   skipped); each layer takes the prefix it needs, for the rows still outside. */
typedef struct { int64_t ds, dv; int64_t row; } RowInc;
typedef struct {
    RowInc *all;        /* sorted: most efficient first (up), least first (down) */
    size_t len, first;  /* first: all[..first) are rows searched */
    RowInc *take;       /* this layer's prefix over rows outside the search */
    int64_t *sum_ds, *sum_dv;  /* sums before take[j] */
    size_t m, at;       /* entries taken; all[at] the next to look at */
} Side;

static int compare_up(const void *a, const void *b) {
    const RowInc *x = a, *y = b;
    i128 l = (i128)x->dv * y->ds, r = (i128)y->dv * x->ds;
    if (l != r) return l > r ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

static int compare_down(const void *a, const void *b) { return -compare_up(a, b); }

static void side_layer(Side *S, const unsigned char *searched) {
    while (S->first < S->len && searched[S->all[S->first].row]) S->first++;
    S->m = 0;
    S->at = S->first;
    S->sum_ds[0] = S->sum_dv[0] = 0;
}

/* Takes increments until their tokens reach `need` or none is left; returns the entries. */
static size_t side_extend(Side *S, const unsigned char *searched, int64_t need) {
    while (S->sum_ds[S->m] < need && S->at < S->len) {
        RowInc x = S->all[S->at++];
        if (searched[x.row]) continue;
        S->take[S->m] = x;
        S->sum_ds[S->m + 1] = S->sum_ds[S->m] + x.ds;
        S->sum_dv[S->m + 1] = S->sum_dv[S->m] + x.dv;
        S->m++;
    }
    return S->m;
}

/* sign * (the LP's change in value over `tokens` tokens) + a >= target: up (sign 1) the gain
   with at most `tokens` added; down (sign -1) the least loss shedding at least `tokens`. */
static int side_reach(Side *S, const unsigned char *searched, int sign, int64_t tokens, int64_t a, i128 target) {
    size_t m = side_extend(S, searched, tokens);
    if (S->sum_ds[m] <= tokens) {  /* every increment fits */
        if (sign < 0 && S->sum_ds[m] < tokens) return 0;  /* the rows cannot give back that many */
        return (i128)a + sign * (i128)S->sum_dv[m] >= target;
    }
    size_t lo = 0, hi = m - 1;  /* the entry j with sum_ds[j] <= tokens < sum_ds[j + 1] */
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (S->sum_ds[mid] <= tokens) lo = mid;
        else hi = mid - 1;
    }
    const RowInc *x = &S->take[lo];
    i128 v = (i128)x->ds * ((i128)a + sign * (i128)S->sum_dv[lo]) + sign * (i128)x->dv * (tokens - S->sum_ds[lo]);
    return v >= (i128)x->ds * target;
}

/* The LP of the rows outside the search lets a completion of (a, w) reach `target` within
   `capacity` tokens. */
static int lp_reach(Side *up, Side *down, const unsigned char *searched, int64_t a, int64_t w, int64_t capacity,
                    i128 target) {
    int64_t room = capacity - w;
    if (room >= 0) return a >= target || side_reach(up, searched, 1, room, a, target);
    return side_reach(down, searched, -1, -room, a, target);
}

/* Every allocation's value is a multiple of the gcd of the usable values: a completion that beats
   the incumbent's value beats it by that much (integral utilities: the scaling's factor; the
   bound's fraction of it proves a weakly correlated optimum the LP window could not). 1 when the
   values share no factor, found after a few of them. */
static int64_t value_step(const Problem *P) {
    int64_t g = 0;
    size_t cells = (size_t)P->n * (size_t)P->k;
    for (size_t j = 0; j < cells && g != 1; j++) {
        if (!P->usable[j] || !P->values[j] || (g && P->values[j] % g == 0)) continue;
        int64_t a = P->values[j] < 0 ? -P->values[j] : P->values[j], b = g;
        while (b) { int64_t t = a % b; a = b; b = t; }
        g = a;
    }
    return g ? g : 1;
}

/* A completion of the state may beat the incumbent (value, tokens): more value within the
   capacity, or as much within fewer tokens. */
static inline int moves_may_improve(const Moves *M, int64_t a, int64_t w, int64_t capacity, int64_t value,
                                    int64_t tokens, int64_t step) {
    return moves_may_reach(M, a, w, capacity, (i128)value + step) || moves_may_reach(M, a, w, tokens - 1, value);
}

/* A completion worth exactly `value` within `tokens` tokens may exist. */
static inline int can_match(const Problem *P, i128 bound, int64_t value, int64_t tokens) {
    i128 target = (i128)P->q * value;
    if (bound < target) return 0;
    return P->p == 0 || (i128)P->p * (P->capacity - tokens) <= bound - target;
}

/* One option of the row being added to a DP layer: every state moves by (dw, dv). */
typedef struct { int64_t dw, dv; int32_t option; } Shift;

/* A layer's shifted copies (one per option of the row being added), merged in order (tokens
   ascending, then value descending) with every point an earlier one dominates dropped: what
   remains is the next layer's Pareto set before its bound tests. A layer holds States or Pairs,
   both starting with (w, v). */
typedef struct {
    const char *layer;  /* set once the layer's storage can no longer move */
    size_t size, from, to;
    Shift shift[64];
    size_t cursor[64];
    int64_t head_w[64], head_v[64];  /* each copy's next point (INT64_MAX tokens: used up), once primed */
    int s, primed;
    int64_t maxv;
    int started;
} Merge;

static inline void merge_add(Merge *m, int64_t dw, int64_t dv, int32_t option) {
    m->shift[m->s] = (Shift){dw, dv, option};
    m->cursor[m->s] = m->from;
    m->s++;
}

/* Copy a's next point into its head (the layer is in place by now). */
static inline void merge_head(Merge *m, int a) {
    size_t c = m->cursor[a];
    if (c < m->to) {  /* (a branch: past the layer's end is no point to read) */
        const int64_t *point = (const int64_t *)(m->layer + c * m->size);
        m->head_w[a] = point[0] + m->shift[a].dw;
        m->head_v[a] = point[1] + m->shift[a].dv;
    } else {
        m->head_w[a] = INT64_MAX;
        m->head_v[a] = 0;
    }
}

/* The next undominated point into *w, *v, and the index in the layer of the point it shifts:
   returns which copy it comes from, or -1 when all are used up. Each copy's next point is kept
   (only the chosen copy's moves), and the first of the least (tokens, then most value) is chosen
   by selects, not branches (the copies' points interleave at random). */
static inline int merge_next(Merge *m, int64_t *w, int64_t *v, size_t *at) {
    if (!m->primed) {
        for (int a = 0; a < m->s; a++) merge_head(m, a);
        m->primed = 1;
    }
    if (!m->s) return -1;
    for (;;) {
        int pick = 0;
        int64_t bw = m->head_w[0], bv = m->head_v[0];
        for (int a = 1; a < m->s; a++) {
            int64_t cw = m->head_w[a], cv = m->head_v[a];
            int better = (cw < bw) | ((cw == bw) & (cv > bv));
            pick = better ? a : pick;
            bw = better ? cw : bw;
            bv = better ? cv : bv;
        }
        if (bw == INT64_MAX) return -1;
        *at = m->cursor[pick]++;
        merge_head(m, pick);
        if (m->started && bv <= m->maxv) continue;  /* dominated: no more value for no fewer tokens */
        m->started = 1;
        m->maxv = bv;
        *w = bw;
        *v = bv;
        return pick;
    }
}

/* A point of a merged layer: tokens, value, the index in the layer of the point it shifts, the copy. */
typedef struct { int64_t w, v; size_t at; int32_t pick; } Merged;
#define MERGE_CHUNK 1024  /* points merge_all hands over at a time (32 KB: they are read back from L1) */
static size_t merge_chunk = MERGE_CHUNK;  /* tests set it as low as 1 (kernel.merge_chunk) */
static int merge_pairs = 1;               /* tests switch merge_two off (kernel.merge_pairs) */

/* merge_all's two copies (see there); `bounded`: stop at room points (a constant where inlined: a
   merge whose points all fit the room runs without the test). */
static inline __attribute__((always_inline)) size_t merge_two(Merge *m, Merged *out, size_t room, int bounded) {
    size_t len = 0, size = m->size, c0 = m->cursor[0], c1 = m->cursor[1];
    const char *p0 = m->layer + c0 * size, *p1 = m->layer + c1 * size, *end = m->layer + m->to * size;
    int64_t dw0 = m->shift[0].dw, dv0 = m->shift[0].dv, dw1 = m->shift[1].dw, dv1 = m->shift[1].dv;
    int64_t maxv = m->maxv;
    int started = m->started;
    while ((!bounded || len < room) && p0 < end && p1 < end) {
        int64_t w0 = ((const int64_t *)p0)[0] + dw0, v0 = ((const int64_t *)p0)[1] + dv0;
        int64_t w1 = ((const int64_t *)p1)[0] + dw1, v1 = ((const int64_t *)p1)[1] + dv1;
        int second = (w1 < w0) | ((w1 == w0) & (v1 > v0));
        int64_t w = second ? w1 : w0, v = second ? v1 : v0;
        out[len] = (Merged){w, v, second ? c1 : c0, second};
        int kept = !started | (v > maxv);  /* else dominated: no more value for no fewer tokens */
        len += (size_t)kept;
        maxv = kept ? v : maxv;
        started = 1;
        size_t step0 = second ? 0 : size;
        p0 += step0;
        p1 += size - step0;
        c0 += (size_t)!second;
        c1 += (size_t)second;
    }
    if (p0 >= end || p1 >= end) {  /* one copy used up: the other's points left */
        int last = p0 < end ? 0 : 1;
        int64_t dw = last ? dw1 : dw0, dv = last ? dv1 : dv0;
        const char *q = last ? p1 : p0;
        size_t c = last ? c1 : c0;
        for (; q < end && (!bounded || len < room); q += size, c++) {
            int64_t v = ((const int64_t *)q)[1] + dv;
            if (started && v <= maxv) continue;
            out[len++] = (Merged){((const int64_t *)q)[0] + dw, v, c, last};
            maxv = v;
            started = 1;
        }
        if (last) c1 = c; else c0 = c;
    }
    m->cursor[0] = c0;
    m->cursor[1] = c1;
    m->maxv = maxv;
    m->started = started;
    return len;
}

/* The merge's next undominated points, in order, into out (at most room, room >= 1): returns how
   many, 0 once all are used up. Two copies (nearly every merge on memory-shaped rows, once the bound
   has cut a row's options) are merged with both cursors in registers (merge_two: in a memory-shaped
   1,000-record solve, perf's share of the merges fell from 29 % to 18 %, though a merge alone in a
   loop of its own runs within 5 % of merge_next's scan); the points and their order are merge_next's
   (of equal points, the first copy's), which takes more copies. */
static size_t merge_all(Merge *m, Merged *out, size_t room) {
    if (m->s == 2 && !m->primed && merge_pairs) {  /* (merge_next primes the heads: never here) */
        size_t left = (m->to - m->cursor[0]) + (m->to - m->cursor[1]);  /* a point each at most */
        return left <= room ? merge_two(m, out, room, 0) : merge_two(m, out, room, 1);
    }
    size_t len = 0;
    while (len < room) {
        Merged *point = out + len;
        int pick = merge_next(m, &point->w, &point->v, &point->at);
        if (pick < 0) break;
        point->pick = pick;
        len++;
    }
    return len;
}

/* Adds a point (heavier and more valuable than the last) to an upper hull of h vertices,
   first removing the vertices it makes non-convex; returns the new vertex count. */
static inline int push_vertex(int32_t *hull, int64_t *hw, int64_t *hv, int h, int32_t o, int64_t w, int64_t v) {
    /* the points arrive with tokens and value (>= 0) larger than every vertex's, so every
       difference below is at most w or v: below 2**31 both, the products fit 64 bits */
    if (!(((uint64_t)w | (uint64_t)v) >> 31))
        while (h >= 2 && (hv[h - 1] - hv[h - 2]) * (w - hw[h - 1]) <= (v - hv[h - 1]) * (hw[h - 1] - hw[h - 2]))
            h--;
    else
        while (h >= 2
               && (i128)(hv[h - 1] - hv[h - 2]) * (w - hw[h - 1]) <= (i128)(v - hv[h - 1]) * (hw[h - 1] - hw[h - 2]))
            h--;
    hull[h] = o; hw[h] = w; hv[h] = v;
    return h + 1;
}

/* Row i's upper convex hull from delete (0, 0): option indices into hull, their tokens and
   values into hw, hv; returns the number of vertices. Counts usable levels on the hull. */
static inline __attribute__((always_inline)) int build_hull(const Problem *P, Py_ssize_t i, int32_t *hull, int64_t *hw, int64_t *hv, long *on_hull,
                      int *skip_usual) {
    Py_ssize_t k = P->k;
    int32_t po[64];
    int64_t pw[64], pv[64];
    int m = 0;
    const int64_t *tw = P->tokens + i * k, *tv = P->values + i * k;
    const uint8_t *ok = P->usable + i * k;
    int h;
    /* the usual row: lower fidelities strictly lighter and worth strictly less, so the points
       arrive sorted and undominated; only the convexity test remains. Where it failed on the last
       row (levels in no order, as in Pisinger's classes), the next 15 rows go straight to the sort
       below, which gives the same hull for such a row (tokens below 2**40: else it comes back) */
    int try_usual = *skip_usual == 0;
    if (!try_usual) (*skip_usual)--;
usual:
    if (try_usual) {
        h = 1;
        hull[0] = (int32_t)k; hw[0] = 0; hv[0] = 0;
        for (Py_ssize_t o = k - 1; o >= 0; o--) {
            if (!ok[o]) continue;
            int64_t w = tw[o], v = tv[o];
            if (w <= hw[h - 1] || v <= hv[h - 1]) { h = -1; break; }
            h = push_vertex(hull, hw, hv, h, (int32_t)o, w, v);
        }
        if (h > 0) {
            *on_hull += h - 1;
            return h;
        }
        *skip_usual = 15;
    }
    /* the levels sorted by tokens, then fidelity, as keys (tokens < 2**40, option < 64): where no
       level is free of tokens, delete (0, 0) comes first, and among levels of equal tokens the
       most valuable replaces the others on the hull (push_vertex pops a vertex of equal tokens),
       which is the hull the order (tokens, value descending, fidelity) gives. Small rows are
       sorted without branches (the tokens of Pisinger's classes come in no order). */
    uint64_t key[64], wide = 0;
    int zero = 0;
    for (Py_ssize_t o = 0; o < k; o++) {
        if (!ok[o]) continue;
        zero |= tw[o] == 0;
        wide |= (uint64_t)tw[o];
        key[m++] = ((uint64_t)tw[o] << 6) | (uint64_t)o;
    }
    if (!try_usual && wide >> 40) { try_usual = 1; m = 0; goto usual; }
    if (!zero) {
        if (m == 5) {
            /* an optimal network: 9 comparators in registers (the transposition sort below takes
               10 through memory; Pisinger's classes have 5 levels: 5 % less kernel time at 100,000) */
            uint64_t r0 = key[0], r1 = key[1], r2 = key[2], r3 = key[3], r4 = key[4], t;
#define CSWAP(a, b) (t = a < b ? a : b, b = a < b ? b : a, a = t)
            CSWAP(r0, r3); CSWAP(r1, r4); CSWAP(r0, r2); CSWAP(r1, r3); CSWAP(r0, r1);
            CSWAP(r2, r4); CSWAP(r1, r2); CSWAP(r3, r4); CSWAP(r2, r3);
#undef CSWAP
            key[0] = r0; key[1] = r1; key[2] = r2; key[3] = r3; key[4] = r4;
        } else if (m <= 8) {
            for (int pass = 0; pass < m; pass++)
                for (int a = pass & 1; a + 1 < m; a += 2) {
                    uint64_t x = key[a], y = key[a + 1];
                    key[a] = x < y ? x : y;
                    key[a + 1] = x < y ? y : x;
                }
        } else {
            for (int a = 1; a < m; a++) {
                uint64_t x = key[a];
                int b = a - 1;
                while (b >= 0 && key[b] > x) { key[b + 1] = key[b]; b--; }
                key[b + 1] = x;
            }
        }
        h = 1;
        hull[0] = (int32_t)k; hw[0] = 0; hv[0] = 0;
        int64_t top = 0;
        for (int a = 0; a < m; a++) {
            int32_t o = (int32_t)(key[a] & 63);
            int64_t w = tw[o], v = tv[o];
            if (v <= top) continue;  /* dominated: a lighter point is worth as much */
            top = v;
            h = push_vertex(hull, hw, hv, h, o, w, v);
        }
        *on_hull += h - 1;
        return h;
    }
    /* delete, then levels from the lowest fidelity up: usually already in token order */
    m = 0;
    po[0] = (int32_t)k; pw[0] = 0; pv[0] = 0; m = 1;
    for (Py_ssize_t o = k - 1; o >= 0; o--) {
        if (!ok[o]) continue;
        int64_t w = tw[o], v = tv[o];
        int b = m - 1;
        /* sort by tokens ascending, value descending, fidelity (option index) ascending */
        while (b >= 0 && (pw[b] > w || (pw[b] == w && (pv[b] < v || (pv[b] == v && po[b] > o))))) {
            po[b + 1] = po[b]; pw[b + 1] = pw[b]; pv[b + 1] = pv[b];
            b--;
        }
        po[b + 1] = (int32_t)o; pw[b + 1] = w; pv[b + 1] = v;
        m++;
    }
    h = 0;
    int64_t best_v = -1;
    for (int a = 0; a < m; a++) {
        int64_t w = pw[a], v = pv[a];
        if (v <= best_v) continue;  /* dominated: a lighter point is worth as much */
        best_v = v;
        h = push_vertex(hull, hw, hv, h, po[a], w, v);
    }
    for (int a = 0; a < h; a++)
        if (hull[a] != k) (*on_hull)++;
    return h;
}

/* The phase 1 incumbent as a full allocation: the floor, with the changes along its path. */
static void rebuild_incumbent(int64_t *choice, const int32_t *floor_opt, Py_ssize_t n, const State *st,
                              const size_t *layer_start, const Candidate *cand, const int32_t *greedy_opt,
                              long layer, int32_t parent, int32_t option) {
    for (Py_ssize_t i = 0; i < n; i++) choice[i] = layer < 0 ? greedy_opt[i] : floor_opt[i];
    if (layer <= 0) return;
    choice[cand[layer - 1].row] = option;
    long idx = parent;
    for (long l = layer - 1; l >= 1; l--) {
        const State *x = &st[layer_start[l] + (size_t)idx];
        choice[cand[l - 1].row] = x->option;
        idx = x->parent;
    }
}

/* Scratch memory kept between calls: a fresh 100,000-row solve would otherwise fault in ~30 MB
   of new pages every call, which measured 10 of its 25 ms. Calls hold the GIL, so one
   workspace serves them all; past KEEP_BYTES it is released after the call. */
#define KEEP_BYTES ((size_t)64 << 20)
enum { W_HULL, W_HULL_LEN, W_FLOOR_POS, W_FLOOR_OPT, W_INC, W_GAP, W_HAS_ALT, W_SEARCHED,
       W_CAND, W_GREEDY, W_BAND, W_TAIL, W_TOP, W_LEAD, W_VALUES, W_USABLE, W_KEEP, W_CORE, W_BEST,
       W_TIE, W_FILL, W_REACHED, W_TIED, W_BIT_LO, W_BIT_AT, W_BITS, W_UTIL, W_REF, W_LOSS_ALLOC, W_ROW_BEST, W_TIED_MASK, W_KEEP_MASK,
       W_LP_INC, W_LP_SUMS, W_LEAD_SUMS, W_SECOND, W_SAMPLE, W_ORDER, W_GRID_BEST, W_GRID_SECOND, W_GRID_TIES,
       W_CUT_LIGHT, W_CUT_VALUES, W_CUT_USABLE, W_CUT_HULL, W_CUT_HW, W_CUT_INC, W_SPARE, W_MERGED, W_SLOTS };
static void *ws_buffer[W_SLOTS];
static size_t ws_size[W_SLOTS];
static Vec ws_states = {NULL, 0, 0, sizeof(State)}, ws_layer_start = {NULL, 0, 0, sizeof(size_t)};
static Vec ws_pairs = {NULL, 0, 0, sizeof(Pair)}, ws_pair_start = {NULL, 0, 0, sizeof(size_t)};

static void *scratch(int slot, size_t count, size_t size) {
    size_t bytes = (count ? count : 1) * size;
    if (ws_size[slot] < bytes) {
        free(ws_buffer[slot]);
        ws_buffer[slot] = malloc(bytes);
        ws_size[slot] = ws_buffer[slot] ? bytes : 0;
    }
    return ws_buffer[slot];
}

static void release_vec(Vec *vec) {
    free(vec->a);
    vec->a = NULL;
    vec->len = vec->cap = 0;
}

static void trim_workspace(void) {
    size_t total = ws_states.cap * ws_states.size + ws_pairs.cap * ws_pairs.size;
    for (int slot = 0; slot < W_SLOTS; slot++) total += ws_size[slot];
    if (total <= KEEP_BYTES) return;
    for (int slot = 0; slot < W_SLOTS; slot++) {
        free(ws_buffer[slot]);
        ws_buffer[slot] = NULL;
        ws_size[slot] = 0;
    }
    release_vec(&ws_states); release_vec(&ws_layer_start); release_vec(&ws_pairs); release_vec(&ws_pair_start);
}

/* 64 bits of a bitset of `words` words from bit `off` (which may lie outside: zeros there). */
static inline uint64_t bits_at(const uint64_t *b, int64_t words, int64_t off) {
    int64_t w = off >= 0 ? off / 64 : -((-off + 63) / 64), r = off - 64 * w;
    uint64_t lo = w >= 0 && w < words ? b[w] : 0, hi = w + 1 >= 0 && w + 1 < words ? b[w + 1] : 0;
    return r ? (lo >> r) | (hi << (64 - r)) : lo;
}

/* dst[x] |= bits_at(src, src_words, off + 64 x) for every x < n_words: the words whose source lies
   inside src by one shift-or loop (vectorized by the compiler), the edges by bits_at (the tied tail's
   layers: a fifth of a weakly correlated solve of 100,000 records went to bits_at's checks) */
static void or_shifted(uint64_t *restrict dst, int64_t n_words, const uint64_t *restrict src, int64_t src_words,
                       int64_t off) {
    int64_t w = off >= 0 ? off / 64 : -((-off + 63) / 64), r = off - 64 * w;
    /* x reads src[w + x] and, where r > 0, src[w + x + 1]: both inside for x in [x0, x1) */
    int64_t x0 = -w < 0 ? 0 : -w > n_words ? n_words : -w;
    int64_t x1 = src_words - w - (r > 0);
    x1 = x1 < x0 ? x0 : x1 > n_words ? n_words : x1;
    for (int64_t x = 0; x < x0; x++) dst[x] |= bits_at(src, src_words, off + 64 * x);
    if (r == 0)
        for (int64_t x = x0; x < x1; x++) dst[x] |= src[w + x];
    else
        for (int64_t x = x0; x < x1; x++) dst[x] |= (src[w + x] >> r) | (src[w + x + 1] << (64 - r));
    for (int64_t x = x1; x < n_words; x++) dst[x] |= bits_at(src, src_words, off + 64 * x);
}

/* The bits set in a[0..n) (a loop the compiler vectorizes; __builtin_popcountll is a library call
   without -mpopcnt) */
static uint64_t count_bits(const uint64_t *a, int64_t n) {
    uint64_t total = 0;
    for (int64_t x = 0; x < n; x++) {
        uint64_t v = a[x];
        v = v - ((v >> 1) & 0x5555555555555555ULL);
        v = (v & 0x3333333333333333ULL) + ((v >> 2) & 0x3333333333333333ULL);
        v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        v += v >> 8;
        v += v >> 16;
        v += v >> 32;
        total += v & 0x7F;
    }
    return total;
}

/* The fills' bitset of sums reached (`words` words, then as many for the copy a row shifts from,
   zeroed) and each sum's first reacher (row, option), from the work buffers; NULL when out of
   memory. */
static uint64_t *reach_buffers(size_t span, size_t words, int32_t **from_row, int32_t **from_opt) {
    *from_row = scratch(W_TIE, span, sizeof(int32_t));
    *from_opt = scratch(W_FILL, span, sizeof(int32_t));
    uint64_t *now = scratch(W_REACHED, 2 * words, sizeof(uint64_t));
    if (!*from_row || !*from_opt || !now) return NULL;
    memset(now, 0, words * sizeof(uint64_t));
    return now;
}

/* One row's move of d tokens over a bitset of the sums reached: the bits of `before` (set within
   words w_lo..w_hi) shifted by d are ORed into `now` (words 0..words-1, span bits); each bit newly
   set records (row, opt) as its first reacher, and [*lo, *hi] widens to the words set. Returns the
   number of words visited (the fills' work). */
static size_t shift_reach(const uint64_t *before, uint64_t *now, int64_t words, size_t span, int64_t w_lo,
                          int64_t w_hi, int64_t d, int32_t row, int32_t opt, int32_t *from_row, int32_t *from_opt,
                          int64_t *lo, int64_t *hi) {
    if (w_hi * 64 + 63 + d < 0) return 0;
    /* destination words: the source words shifted by d bits, clipped to the span */
    int64_t d_lo = (w_lo * 64 + d) >= 0 ? (w_lo * 64 + d) / 64 : 0;
    int64_t d_hi = (w_hi * 64 + 63 + d) / 64;
    if (d_hi >= words) d_hi = words - 1;
    int64_t nw = w_hi - w_lo + 1;
    for (int64_t x = d_lo; x <= d_hi; x++) {
        /* bits of `before` at positions x*64 - d .. x*64 - d + 63, within [w_lo, w_hi] */
        uint64_t fresh = bits_at(before + w_lo, nw, x * 64 - d - w_lo * 64) & ~now[x];
        if (x == words - 1 && span % 64) fresh &= ((uint64_t)1 << (span % 64)) - 1;
        if (!fresh) continue;
        now[x] |= fresh;
        if (x < *lo) *lo = x;
        if (x > *hi) *hi = x;
        while (fresh) {
            int bit = __builtin_ctzll(fresh);
            fresh &= fresh - 1;
            size_t y = (size_t)x * 64 + (size_t)bit;
            from_row[y] = row;
            from_opt[y] = opt;
        }
    }
    return d_hi >= d_lo ? (size_t)(d_hi - d_lo + 1) : 0;
}

/* The banded LP split (from BAND_ROWS rows; band_mode): the split and the floor without every
   row's hull. A sample of rows estimates the multiplier; two multipliers either side of it, top above
   and bottom below, bound a band that holds it unless the sample misled (then the caller takes every
   hull, as without the band). A row whose best option at top is unique and is its unique best at
   bottom has no hull increment as efficient as anything in the band (the increments into that option
   are more efficient than top, the ones after it less than bottom): it gives its tokens to the
   increments above the band and is left without a hull. The others build theirs, and the split is
   taken among their increments in the band, as among all increments (the same multiplier). */
#define BAND_ROWS 16384
/* ... and from DENSE_BAND_ROWS where the pilot's rows have DENSE_BAND * k hull increments a row: the band
   spares each row outside it a hull's work for a test of its k levels (memory-shaped rows, 3.6
   increments of 4 levels, run 20 % fewer instructions at 10,000 rows; uncorrelated ones, 1.7 of 5,
   would run more). It also mispredicts more branches: memory-shaped rows gain from about 10,500 rows
   (0.88-0.95 of the time at 13,000 to 15,000, 1.01-1.05 at 9,000 to 10,000) */
#define DENSE_BAND_ROWS 12288
#define DENSE_BAND 0.6
#define TIED_ROWS 512      /* ... and the tied split alone from this many, */
#define TIED_SAMPLE 128     /* with this many rows sampled (a block of ties holds the split even so) */
#define BAND_Z 4.0          /* the band's half-width, in standard errors of the sample's estimate */


/* The OR of row i's usable levels' tokens and values (a level's value may be anything where it is not
   usable): products of them with numbers of `bits` bits stay below 2**62 where this is below
   2**(62 - bits), and their differences fit 64 bits. */
static inline uint64_t row_width(const Problem *P, Py_ssize_t i) {
    Py_ssize_t k = P->k;
    const int64_t *tw = P->tokens + i * k, *tv = P->values + i * k;
    const uint8_t *ok = P->usable + i * k;
    uint64_t wide = 0;
    for (Py_ssize_t o = 0; o < k; o++) wide |= ok[o] ? (uint64_t)tw[o] | (uint64_t)tv[o] : 0;
    return wide;
}

/* Whether row i's products with numbers of `bits` bits (at most 61) stay below 2**62: at once where the
   width of every row allows it, else row by row. */
static inline int narrow_row(const Problem *P, Py_ssize_t i, int bits) {
    return !(P->width >> (62 - bits)) || !(row_width(P, i) >> (62 - bits));
}

#define PREFETCH_ROWS 16 /* how far ahead a pass over rows out of input order asks for a row's levels */
#define PREFETCH_BYTES ((size_t)1 << 20)  /* ... where the rows' levels take more than this (a core's L2) */

/* Whether the passes out of input order ask for rows ahead: the levels (tokens, values, flags) past the
   cache that holds them (below it the asking costs more than it spares: 10,000 records, 2-5 %) */
static inline int far_rows(const Problem *P) { return (size_t)P->n * (size_t)P->k * 17 > PREFETCH_BYTES; }

/* Asks for row i's tokens, values and usable flags ahead of their use (the first and last of its levels:
   the row may straddle two cache lines) */
static inline void prefetch_row(const Problem *P, Py_ssize_t i) {
    Py_ssize_t k = P->k;
    __builtin_prefetch(P->tokens + i * k);
    __builtin_prefetch(P->tokens + i * k + k - 1);
    __builtin_prefetch(P->values + i * k);
    __builtin_prefetch(P->values + i * k + k - 1);
    __builtin_prefetch(P->usable + i * k);
}

/* Whether row i is outside the band [bottom, top]: one option m is best at top and at bottom, and
   strictly (it is then strictly best between them). Into *best m, into *second the option best after m
   at both ends (-1: m is the only option; -2: another at each end, or ties). Reduced values at a / b
   are b v - a w (delete: 0), in 64 bits where the row's numbers leave room (bits: the widest of the
   band's ends; else the row is taken as inside, and gets its hull). */
static inline int outside_band(const Problem *P, Py_ssize_t i, const Increment *top, const Increment *bottom,
                               int bits, int *best, int *second) {
    Py_ssize_t k = P->k;
    const int64_t *tw = P->tokens + i * k, *tv = P->values + i * k;
    const uint8_t *ok = P->usable + i * k;
    if (!narrow_row(P, i, bits)) return 0;
    /* (unsigned: a level that is not usable may hold any number; its products wrap and are not read) */
    const uint64_t at = (uint64_t)top->dv, bt = (uint64_t)top->ds, ab = (uint64_t)bottom->dv, bb = (uint64_t)bottom->ds;
    int64_t rt[64], rb[64];
    for (Py_ssize_t o = 0; o < k; o++) {
        uint64_t w = (uint64_t)tw[o], v = (uint64_t)tv[o];
        int64_t t = (int64_t)(bt * v - at * w), b = (int64_t)(bb * v - ab * w);
        rt[o] = ok[o] ? t : INT64_MIN;
        rb[o] = ok[o] ? b : INT64_MIN;
    }
    rt[k] = rb[k] = 0;  /* delete */
    int m = (int)k;
    int64_t at_top = 0;
    for (Py_ssize_t o = 0; o < k; o++) {
        int better = rt[o] > at_top;
        m = better ? (int)o : m;
        at_top = better ? rt[o] : at_top;
    }
    /* the best of the others at each end (first of equals), from delete (where it is not m) down: by
       masks, not branches, since which option is m varies from row to row (a mispredicted branch a
       row in the band's pass at 100,000 rows) */
    int st = m != (int)k ? (int)k : -1, sb = st;
    int64_t next_top = m != (int)k ? 0 : INT64_MIN, next_bottom = next_top;
    for (Py_ssize_t o = k - 1; o >= 0; o--) {
        int counts = (o != m) & (ok[o] != 0);
        int64_t t = -(int64_t)(counts & (rt[o] >= next_top)), b = -(int64_t)(counts & (rb[o] >= next_bottom));
        st = (int)(((int64_t)o & t) | ((int64_t)st & ~t));
        next_top = (rt[o] & t) | (next_top & ~t);
        sb = (int)(((int64_t)o & b) | ((int64_t)sb & ~b));
        next_bottom = (rb[o] & b) | (next_bottom & ~b);
    }
    if (st >= 0 && (next_top >= at_top || next_bottom >= rb[m])) return 0;
    *best = m;
    *second = st == sb ? st : -2;
    return 1;
}

/* Bits of the widest of the band's ends (their products with a row's numbers must fit 64 bits). */
static inline int band_bits(const Increment *top, const Increment *bottom) {
    uint64_t w = (uint64_t)top->ds | (uint64_t)top->dv | (uint64_t)bottom->ds | (uint64_t)bottom->dv;
    return w ? 64 - __builtin_clzll(w) : 0;
}

/* The band's grid: GRID multipliers from top (grid[0]) down to bottom (grid[GRID - 1]), sample
   increments at even shares of the sample's tokens in the band. One pass over the rows finds each row's
   best option at every one of them (the first of the most valuable reduced values, delete first, and
   whether another ties it), the best of its other options, and, summed over the rows, the tokens of
   the best options: that brackets the
   split between two adjacent multipliers exactly (where the sum at one passes the capacity and at the
   one above it does not), and the band is narrowed to that bracket, widened until enough rows are in it
   (the rankings around the floor fill from them). A row whose best option is the same and unique at
   both ends of the narrowed band is outside it, as outside_band says for the wide one; the pass costs
   about a fifth of a hull a row where AVX-512 multiplies 8 multipliers at once (without it the grid is
   not drawn: a twin in plain C serves the tests). */
#define GRID 8
#define GRID_ROWS 4096  /* with the grid, the band from this many rows (solve_arrays) */
#define SAMPLE_MAX 4096 /* ... and at most this many rows sampled */
typedef struct {
    Increment at[GRID];
    int bits;  /* of the widest numerator or denominator */
} Grid;

/* -1: not yet asked (AVX-512 F, DQ, VL, BW); 0: no grid; 1: AVX-512 (the tied split's rows too); 2: the C twins
   (tests: kernel.grid) */
static int grid_vectors = -1;

static int grid_on(void) {
#ifdef X86_VECTORS
    if (grid_vectors < 0)
        grid_vectors = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
                       && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
#else
    if (grid_vectors < 0) grid_vectors = 0;
#endif
    return grid_vectors;
}

/* The band the kernel takes for n rows by default (the hull counts are then not taken: -1) */
static int band_mode(Py_ssize_t n) {
    return n >= DENSE_BAND_ROWS || (n >= GRID_ROWS && grid_on()) ? 1 : n >= TIED_ROWS ? 4 : 0;
}

/* What the grid pass writes: each row's best option at multiplier j in byte j of best[i], bit j of
   ties[i] where another option ties it (every bit where the row's products may not fit 64 bits: such a
   row is taken as in the band), in byte j of second[i] the best of the other options (0xFF: none; the
   last of equals), the best options' tokens summed over the rows into tokens[j], and into changes[j] the
   rows whose best differs between multipliers j and j + 1 (or ties at either). */
typedef struct {
    uint64_t *best, *second;
    uint8_t *ties;
    int64_t tokens[GRID], changes[GRID];
} GridPass;

/* A row whose products may not fit 64 bits: tied at every multiplier, so taken as in the band (its best
   options 0xFF: it adds no tokens to the sums). */
static inline void grid_inside(GridPass *out, Py_ssize_t i) {
    out->best[i] = ~(uint64_t)0;
    out->second[i] = ~(uint64_t)0;
    out->ties[i] = 0xFF;
}

static void grid_row(const Problem *P, Py_ssize_t i, const Grid *g, uint64_t *best_out, uint64_t *second_out,
                     uint8_t *ties_out, int64_t *tokens_out) {
    Py_ssize_t k = P->k;
    const int64_t *tw = P->tokens + i * k, *tv = P->values + i * k;
    const uint8_t *ok = P->usable + i * k;
    uint64_t best_of = 0, second_of = 0;
    uint8_t ties = 0;
    for (int j = 0; j < GRID; j++) {
        const uint64_t p = (uint64_t)g->at[j].dv, q = (uint64_t)g->at[j].ds;
        int64_t best = 0, bw = 0, next = INT64_MIN;
        int pick = (int)k, after = 0xFF;
        for (Py_ssize_t o = 0; o < k; o++) {
            if (!ok[o]) continue;
            int64_t r = (int64_t)(q * (uint64_t)tv[o] - p * (uint64_t)tw[o]);
            if (r > best) {
                next = best; after = pick;
                best = r; pick = (int)o; bw = tw[o]; ties &= (uint8_t)~(1u << j);
            } else {
                if (r == best) ties |= (uint8_t)(1u << j);
                if (r >= next) { next = r; after = (int)o; }
            }
        }
        best_of |= (uint64_t)pick << (8 * j);
        second_of |= (uint64_t)after << (8 * j);
        tokens_out[j] = bw;
    }
    *best_out = best_of;
    *second_out = second_of;
    *ties_out = ties;
}

static void grid_pass_plain(const Problem *P, const Grid *g, GridPass *out) {
    memset(out->tokens, 0, sizeof out->tokens);
    memset(out->changes, 0, sizeof out->changes);
    for (Py_ssize_t i = 0; i < P->n; i++) {
        int64_t tokens[GRID];
        uint8_t ties;
        if (!narrow_row(P, i, g->bits)) {
            grid_inside(out, i);
            continue;
        }
        grid_row(P, i, g, &out->best[i], &out->second[i], &ties, tokens);
        out->ties[i] = ties;
        for (int j = 0; j < GRID; j++)  /* (wrapping as the lanes do) */
            out->tokens[j] = (int64_t)((uint64_t)out->tokens[j] + (uint64_t)tokens[j]);
        for (int j = 0; j + 1 < GRID; j++)
            out->changes[j] += ((out->best[i] >> (8 * j) & 0xFF) != (out->best[i] >> (8 * j + 8) & 0xFF))
                               | ((ties >> j) & 1) | ((ties >> (j + 1)) & 1);
    }
}

#ifdef X86_VECTORS
/* grid_pass_plain with the 8 multipliers in the lanes of AVX-512 registers: the same numbers */
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw"))) static void grid_pass_avx512(const Problem *P,
                                                                                           const Grid *g,
                                                                                           GridPass *out) {
    Py_ssize_t n = P->n, k = P->k;
    int64_t ps[GRID], qs[GRID];
    for (int j = 0; j < GRID; j++) { ps[j] = g->at[j].dv; qs[j] = g->at[j].ds; }
    const __m512i vp = _mm512_loadu_si512(ps), vq = _mm512_loadu_si512(qs), none = _mm512_set1_epi64(k);
    const __m512i one = _mm512_set1_epi64(1);
    __m512i sum = _mm512_setzero_si512(), changes = _mm512_setzero_si512();
    int every_row = !(P->width >> (62 - g->bits));  /* every row's products fit (else asked row by row) */
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!every_row && !narrow_row(P, i, g->bits)) {
            grid_inside(out, i);
            continue;
        }
        const int64_t *tw = P->tokens + i * k, *tv = P->values + i * k;
        const uint8_t *ok = P->usable + i * k;
        __m512i best = _mm512_setzero_si512(), pick = none, bw = _mm512_setzero_si512();
        __m512i next = _mm512_set1_epi64(INT64_MIN), after = _mm512_set1_epi64(0xFF);
        __mmask8 ties = 0;
        for (Py_ssize_t o = 0; o < k; o++) {
            if (!ok[o]) continue;
            __m512i w = _mm512_set1_epi64(tw[o]), v = _mm512_set1_epi64(tv[o]), level = _mm512_set1_epi64(o);
            __m512i r = _mm512_sub_epi64(_mm512_mullo_epi64(vq, v), _mm512_mullo_epi64(vp, w));
            __mmask8 gt = _mm512_cmpgt_epi64_mask(r, best), eq = _mm512_cmpeq_epi64_mask(r, best);
            __mmask8 ge = (__mmask8)(_mm512_cmpge_epi64_mask(r, next) & ~gt);
            next = _mm512_mask_mov_epi64(_mm512_mask_mov_epi64(next, ge, r), gt, best);
            after = _mm512_mask_mov_epi64(_mm512_mask_mov_epi64(after, ge, level), gt, pick);
            best = _mm512_mask_mov_epi64(best, gt, r);
            pick = _mm512_mask_mov_epi64(pick, gt, level);
            bw = _mm512_mask_mov_epi64(bw, gt, w);
            ties = (__mmask8)((ties & ~gt) | eq);
        }
        sum = _mm512_add_epi64(sum, bw);
        __mmask8 moved = _mm512_cmpneq_epi64_mask(pick, _mm512_alignr_epi64(pick, pick, 1));
        changes = _mm512_mask_add_epi64(changes, (__mmask8)((moved | ties | (ties >> 1)) & 0x7F), changes, one);
        _mm512_mask_cvtepi64_storeu_epi8(&out->best[i], 0xFF, pick);
        _mm512_mask_cvtepi64_storeu_epi8(&out->second[i], 0xFF, after);
        out->ties[i] = ties;
    }
    _mm512_storeu_si512(out->tokens, sum);
    _mm512_storeu_si512(out->changes, changes);
}
#endif

static void grid_pass(const Problem *P, const Grid *g, GridPass *out) {
#ifdef X86_VECTORS
    if (grid_on() == 1) { grid_pass_avx512(P, g, out); return; }
#endif
    grid_pass_plain(P, g, out);
}

static int compare_efficiencies(const void *a, const void *b) {
    return -compare_efficiency((const Increment *)a, (const Increment *)b);
}

/* The grid between top and bottom from the sample's increments (copy: scratch for m), or 0 where its
   numbers are too wide for 64-bit products with the rows'. */
static int draw_grid(const Increment *x, size_t m, const Increment *top, const Increment *bottom, Increment *copy,
                     Grid *g) {
    size_t c = 0;
    int64_t total = 0;
    for (size_t j = 0; j < m; j++)
        if (group_of(&x[j], top, bottom) == 1) { copy[c++] = x[j]; total += x[j].ds; }
    qsort(copy, c, sizeof(Increment), compare_efficiencies);
    g->at[0] = *top;
    g->at[GRID - 1] = *bottom;
    int64_t seen = 0;
    size_t a = 0;
    for (int j = 1; j < GRID - 1; j++) {
        double share = (double)total * (double)j / (double)(GRID - 1);
        while (a < c && (double)(seen + copy[a].ds) < share) seen += copy[a++].ds;
        g->at[j] = a < c ? copy[a] : *bottom;
    }
    uint64_t w = 0;
    for (int j = 0; j < GRID; j++) w |= (uint64_t)g->at[j].ds | (uint64_t)g->at[j].dv;
    g->bits = w ? 64 - __builtin_clzll(w) : 0;
    return g->bits <= 60;
}

/* The sample's split for cap tokens (copy: its increments, overwritten), or 0 where they do not exceed
   cap. */
static int sample_split(const Increment *x, size_t m, double cap, int64_t total, Increment *copy, Increment *work,
                        Increment *out) {
    int64_t above;
    if (cap < 0.0 || cap >= (double)total) return 0;
    memcpy(copy, x, m * sizeof(Increment));
    return split_increment(copy, m, (int64_t)cap, total, work, out, &above);
}

/* Whether TIED_PILOT rows spread over the instance share a hull increment's efficiency, at least
   TIED_PILOT / 4 of their increments exactly as efficient (a block of ties the split may be in): what
   the tied split needs to be worth a sample on fewer rows. Their increments are counted into
   *increments (how dense the rows' hulls are: the band below BAND_ROWS asks). */
#define TIED_PILOT 32
static int pilot_ties(const Problem *P, size_t *increments) {
    Py_ssize_t n = P->n;
    Increment *x = scratch(W_SAMPLE, TIED_PILOT * (size_t)P->k + 1, sizeof(Increment));
    if (!x) return 0;
    size_t m = 0;
    long on_hull = 0;
    int skip_usual = 0;
    for (size_t a = 0; a < TIED_PILOT; a++) {
        int32_t hull[64];
        int64_t hw[64], hv[64];
        int len = build_hull(P, (Py_ssize_t)(a * (size_t)n / TIED_PILOT), hull, hw, hv, &on_hull, &skip_usual);
        for (int t = 1; t < len; t++) x[m++] = increment(hw[t] - hw[t - 1], hv[t] - hv[t - 1]);
    }
    *increments = m;
    /* the increments counted by efficiency in an open-addressed table (hashed on the rounded
       efficiency, each slot one exact efficiency): the sort it replaces cost more than the pilot's
       hulls, which decided against the tied split at 1,000 rows */
    uint16_t slot_of[4 * TIED_PILOT * 64], count[4 * TIED_PILOT * 64];
    size_t size = 64;
    while (size < 2 * m) size *= 2;
    memset(slot_of, 0xFF, size * sizeof(uint16_t));
    for (size_t j = 0; j < m; j++) {
        uint64_t bits;
        memcpy(&bits, &x[j].eff, sizeof bits);
        size_t h = (size_t)((bits * 0x9E3779B97F4A7C15ULL) >> 40) & (size - 1);
        while (slot_of[h] != 0xFFFF && compare_efficiency(&x[slot_of[h]], &x[j]) != 0) h = (h + 1) & (size - 1);
        if (slot_of[h] == 0xFFFF) { slot_of[h] = (uint16_t)j; count[h] = 0; }
        if (++count[h] >= TIED_PILOT / 4) return 1;
    }
    return 0;
}

/* The band [bottom, top] from a sample of `rows` rows: 1 a band, 2 one efficiency (the tied split), 0
   where it cannot or would spare little (tied_only: anything but one efficiency), -1 no memory. */
static int sample_band(const Problem *P, size_t rows, int tied_only, Increment *top, Increment *bottom, Grid *grid) {
    Py_ssize_t n = P->n, k = P->k;
    Increment *x = scratch(W_SAMPLE, 3 * rows * (size_t)(k + 1) + rows + 1, sizeof(Increment));
    if (!x) return -1;
    Increment *copy = x + rows * (size_t)(k + 1), *work = copy + rows * (size_t)(k + 1);
    size_t *start = (size_t *)(work + rows * (size_t)(k + 1));  /* each sampled row's first increment */
    uint64_t seed = 0x2545F4914F6CDD1DULL;  /* fixed: the same band on every run */
    size_t m = 0;
    int64_t total = 0;
    long on_hull = 0;
    int skip_usual = 0;
    /* one row at random from each of `rows` runs of rows (stratified); fewer rows than that (tests), with
       replacement. Their numbers are fetched a few rows ahead: each row is a miss of the caches */
    Py_ssize_t *pick = (Py_ssize_t *)copy;  /* (until the sample's splits) */
    for (size_t a = 0; a < rows; a++) {
        size_t from = (size_t)n >= rows ? a * (size_t)n / rows : 0;
        size_t span = (size_t)n >= rows ? (a + 1) * (size_t)n / rows - from : (size_t)n;
        pick[a] = (Py_ssize_t)(from + next_random(&seed) % span);
    }
    for (size_t a = 0; a < rows; a++) {
        if (a + 8 < rows) {
            prefetch_row(P, pick[a + 8]);
        }
        Py_ssize_t i = pick[a];
        int32_t hull[64];
        int64_t hw[64], hv[64];
        int len = build_hull(P, i, hull, hw, hv, &on_hull, &skip_usual);
        start[a] = m;
        for (int t = 1; t < len; t++) {
            x[m] = increment(hw[t] - hw[t - 1], hv[t] - hv[t - 1]);
            total += x[m].ds;
            m++;
        }
    }
    start[rows] = m;
    if (!m) return 0;
    double scale = (double)rows / (double)n, cap = (double)P->capacity * scale;
    Increment mid;
    if (!sample_split(x, m, cap, total, copy, work, &mid)) mid = (Increment){1, 0, 0.0};  /* lambda = 0 */
    /* the spread of a row's tokens above the estimate: the sample's sum of them errs by about
       sqrt(rows) of its standard deviation */
    double sum = 0.0, squares = 0.0;
    for (size_t a = 0; a < rows; a++) {
        double t = 0.0;
        for (size_t j = start[a]; j < start[a + 1] && compare_efficiency(&x[j], &mid) > 0; j++) t += (double)x[j].ds;
        sum += t;
        squares += t * t;
    }
    double mean = sum / (double)rows, var = squares / (double)rows - mean * mean;
    /* and at least enough rows either side for the rankings of the rows around the floor to fill from
       rows with a hull (4 RANKED of them, or an eighth of the rows, in increments of the sample's mean
       tokens) */
    double fill = (double)n / 8.0 < 4.0 * RANKED ? (double)n / 8.0 : 4.0 * RANKED;
    double margin = BAND_Z * sqrt((var > 0.0 ? var : 0.0) * (double)rows) + (fill * scale + 2.0) * (double)total / (double)m;
    if (P->banded == 3) margin = (double)total / (double)m;  /* tests: a narrow band (the split often outside) */
    /* past every increment: the band reaches down to lambda = 0. From top, the band is lambda = 0 (a
       row's best is its most valuable option; every increment fits, or the band fails), where every
       row's increment into its floor is ranked: the band spares no hull, and the kernel declines it
       (tests: taken) */
    if (!sample_split(x, m, cap - margin, total, copy, work, top)) {
        if (P->banded == 1 || tied_only) return 0;
        *top = (Increment){1, 0, 0.0};
    }
    if (!sample_split(x, m, cap + margin, total, copy, work, bottom)) *bottom = (Increment){1, 0, 0.0};
    /* one efficiency either side of the capacity: a block of increments exactly as efficient holds it
       (every level of Pisinger's correlated classes ties at lambda): the tied split (see tied_split) */
    if (compare_efficiency(top, bottom) == 0 && top->dv > 0) return 2;
    if (tied_only) return 0;
    /* with the grid, the band narrows to a bracket of the split (banded_split) */
    if (grid && grid_on() && draw_grid(x, m, top, bottom, copy, grid)) return 1;
    if (grid) grid->bits = -1;
    /* where half the rows have an increment in the band, the band spares few hulls and costs a pass:
       every hull, as without it */
    size_t inside = 0;
    for (size_t a = 0; a < rows; a++)
        for (size_t j = start[a]; j < start[a + 1]; j++)
            if (group_of(&x[j], top, bottom) == 1) { inside++; break; }
    return inside * 2 <= rows || P->banded > 1;  /* tests: the band wherever it can be taken */
}

/* Chooses the band [bottom, top]: 1 a band, 2 one efficiency (the tied split), 0 where it cannot or
   would spare little (the caller takes every hull), -1 no memory. Where a pilot finds a block of ties,
   a small sample looks for one efficiency around the capacity first (the band's sample of up to 16,384
   rows would find the same). Below BAND_ROWS rows the band is drawn only where the pilot's hulls are
   dense, from a sample of at least 512 rows; with the grid (into *grid: bits -1 where none is drawn)
   always, from a sample of n/32 rows (256 to SAMPLE_MAX). */
static int choose_band(const Problem *P, Increment *top, Increment *bottom, Grid *grid) {
    Py_ssize_t n = P->n;
    grid->bits = -1;
    if (n == 0) return 0;
    size_t increments = 0;
    if ((P->banded == 1 || P->banded == 4) && pilot_ties(P, &increments)) {
        int chosen = sample_band(P, TIED_SAMPLE, 1, top, bottom, NULL);
        if (chosen || P->banded == 4) return chosen;
    } else if (P->banded == 4) {
        return 0;
    }
    size_t rows = (size_t)n / 16;
    if (grid_on()) {
        /* (the grid narrows the band: a smaller sample, a wider band to start from) */
        rows = (size_t)n / 32;
        return sample_band(P, rows < 256 ? 256 : rows > SAMPLE_MAX ? SAMPLE_MAX : rows, 0, top, bottom, grid);
    }
    if (P->banded == 1 && n < BAND_ROWS) {
        if ((double)increments < DENSE_BAND * (double)P->k * TIED_PILOT) return 0;
        return sample_band(P, rows < 512 ? 512 : rows, 0, top, bottom, grid);
    }
    return sample_band(P, rows < 1024 ? 1024 : rows > 16384 ? 16384 : rows, 0, top, bottom, grid);
}

/* The c-th row in the band's order (banded_split): the in_band rows in it, then the others, written from
   the back. */
static inline Py_ssize_t band_order(const int32_t *order, Py_ssize_t in_band, Py_ssize_t n, Py_ssize_t c) {
    return c < in_band ? order[c] : order[n - 1 - (c - in_band)];
}

/* Phase 1's hulls and split with the band (narrowed by the grid where one is drawn): 1 with the split in
   *split and the tokens of the increments more efficient than it in *above (rows left without a hull:
   hull_len -1, their floor option in floor_opt and the option second to it at both ends of the band in
   second_opt, -2 where that differs; in order, the rows in the band, *rows_in_band of them, then the
   others from the back, each in input order); 0 where the split is outside the band (nothing is kept:
   the caller takes every hull); -1 no memory. */
static int banded_split(const Problem *P, int32_t *hull, int *hull_len, int32_t *floor_opt, int8_t *second_opt,
                        Increment *inc, Increment *top, Increment *bottom, Increment *split, int64_t *above,
                        int32_t *order, Py_ssize_t *rows_in_band) {
    Py_ssize_t n = P->n, k = P->k, n_in = 0;
    Grid grid;
    int chosen = choose_band(P, top, bottom, &grid);
    if (chosen != 1) return chosen;
    int64_t over = 0, band_w = 0;  /* tokens above the band; in it */
    size_t m = 0;
    long on_hull = 0;
    int skip_usual = 0;
    int bits = band_bits(top, bottom);
    if (bits > 60) return 0;
    /* the grid: the band narrowed to the bracket [a, b] of its multipliers (see draw_grid) */
    GridPass pass;
    int a = 0, b = GRID - 1;
    if (grid.bits >= 0) {
        pass.best = scratch(W_GRID_BEST, (size_t)n, sizeof(uint64_t));
        pass.second = scratch(W_GRID_SECOND, (size_t)n, sizeof(uint64_t));
        pass.ties = scratch(W_GRID_TIES, (size_t)n, 1);
        if (!pass.best || !pass.second || !pass.ties) return -1;
        grid_pass(P, &grid, &pass);
        /* the first multiplier whose best options' tokens pass the capacity: the split is between it and
           the one above (the lightest best options at that one fit, the heaviest at this one do not) */
        int s = 0;
        while (s < GRID && pass.tokens[s] <= P->capacity) s++;
        if (s == 0 || s == GRID) return 0;  /* outside the band: every hull */
        /* at least RANKED + 1 rows changing level either side of the bracket, so that the rankings around
           the floor fill from rows in the band and turn the others away (sat_next, sat_prev) */
        int64_t fill = RANKED + 1, rows_above = 0, rows_below = 0;
        a = s - 1;
        b = s;
        while (a > 0 && rows_above < fill) rows_above += pass.changes[--a];
        while (b < GRID - 1 && rows_below < fill) rows_below += pass.changes[b++];
        *top = grid.at[a];
        *bottom = grid.at[b];
    }
    /* with the grid, the tokens of the rows outside at their best: the grid's sum at multiplier a, less
       the rows in the band's best there (their levels at hand for the hull; the others' not read) */
    uint64_t grid_over = grid.bits >= 0 ? (uint64_t)pass.tokens[a] : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int best, second;
        int outside;
        if (grid.bits >= 0) {
            uint64_t picks = pass.best[i], after = pass.second[i];
            best = (int)(picks >> (8 * a) & 0xFF);
            /* the option second at both ends is second at lambda (see outside_band); else at_lambda asks */
            int top_second = (int)(after >> (8 * a) & 0xFF);
            second = top_second != (int)(after >> (8 * b) & 0xFF) ? -2 : top_second == 0xFF ? -1 : top_second;
            outside = !(pass.ties[i] & ((1u << a) | (1u << b))) && best == (int)(picks >> (8 * b) & 0xFF);
        } else outside = outside_band(P, i, top, bottom, bits, &best, &second);
        if (outside) {
            hull_len[i] = -1;
            floor_opt[i] = best;
            second_opt[i] = (int8_t)second;
            if (grid.bits < 0) over += option_w(P, i, best);
            order[n - 1 - (i - n_in)] = (int32_t)i;  /* the rows outside, from the back */
        } else order[n_in++] = (int32_t)i;
    }
    /* the rows in the band, in input order, their levels asked for ahead (scattered over the input) */
    int far = far_rows(P);
    for (Py_ssize_t c = 0; c < n_in; c++) {
        Py_ssize_t i = order[c];
        if (far && c + PREFETCH_ROWS < n_in) prefetch_row(P, order[c + PREFETCH_ROWS]);
        if (grid.bits >= 0) {
            int pick = (int)(pass.best[i] >> (8 * a) & 0xFF);
            if (pick != 0xFF) grid_over -= (uint64_t)option_w(P, i, pick);
        }
        size_t at = (size_t)i * (size_t)(k + 1);
        int64_t hw[64], hv[64];
        int len = build_hull(P, i, hull + at, hw, hv, &on_hull, &skip_usual);
        hull_len[i] = len;
        for (int t = 1; t < len; t++) {
            Increment x = increment(hw[t] - hw[t - 1], hv[t] - hv[t - 1]);
            int g = group_of(&x, top, bottom);
            if (g == 0) over += x.ds;
            else if (g == 1) { inc[m++] = x; band_w += x.ds; }
        }
    }
    *rows_in_band = n_in;
    over = (int64_t)((uint64_t)over + grid_over);  /* (wrapping as the sums did) */
    if (over > P->capacity) return 0;
    if (over + band_w <= P->capacity) {
        if (bottom->dv != 0) return 0;
        /* the band reaches lambda = 0 and below it there is nothing: every increment fits, no split */
        *split = (Increment){1, 0, 0.0};
        *above = over + band_w;
        return 1;
    }
    Increment *work = scratch(W_BAND, m, sizeof(Increment));
    if (!work) return -1;
    int64_t in_band;
    if (!split_increment(inc, m, P->capacity - over, band_w, work, split, &in_band)) return 0;
    *above = over + in_band;
    return 1;
}

/* One row of the tied split in integers of type T (int64_t where the row's products fit, else i128):
   its best reduced value, the best of the others (itself where two tie), the best options (bit o), the
   lightest and heaviest of them, and how many options it has (delete included). */
#define TIED_ROW(NAME, T)                                                                                  \
    static inline void NAME(const Problem *P, Py_ssize_t i, i128 *best_out, i128 *second_out,            \
                            uint64_t *mask_out, int *light_out, int *heavy_out, int *options_out) {        \
        Py_ssize_t k = P->k;                                                                               \
        const int64_t *tw = P->tokens + i * k, *tv = P->values + i * k;                                  \
        const uint8_t *ok = P->usable + i * k;                                                           \
        T best = 0, second = 0; /* delete: 0 */                                                           \
        uint64_t mask = (uint64_t)1 << k;                                                                 \
        int options = 1, seconds = 0;                                                                     \
        int light = (int)k, heaviest = (int)k; /* delete */                                               \
        int64_t lw = 0, hw = 0;                                                                           \
        for (Py_ssize_t o = 0; o < k; o++) {                                                              \
            if (!ok[o]) continue;                                                                         \
            options++;                                                                                    \
            int64_t w = tw[o];                                                                            \
            T r = (T)P->q * tv[o] - (T)P->p * w;                                                          \
            if (r > best) {                                                                               \
                second = best; seconds = 1; best = r; mask = (uint64_t)1 << o;                          \
                light = heaviest = (int)o; lw = hw = w;                                                   \
            } else if (r == best) {                                                                       \
                mask |= (uint64_t)1 << o;                                                                 \
                if (w < lw) { light = (int)o; lw = w; }                                                   \
                if (w > hw) { heaviest = (int)o; hw = w; }                                                \
            } else if (!seconds || r > second) { second = r; seconds = 1; }                               \
        }                                                                                                 \
        /* a usable level of nothing (0 tokens, 0 value) as good as delete comes before it, as on the hull */ \
        if (light == (int)k || heaviest == (int)k)                                                        \
            for (Py_ssize_t o = 0; o < k; o++)                                                            \
                if (((mask >> o) & 1) && tw[o] == 0) {                                                    \
                    light = light == (int)k ? (int)o : light;                                             \
                    heaviest = heaviest == (int)k ? (int)o : heaviest;                                    \
                    break;                                                                                \
                }                                                                                         \
        *best_out = best;                                                                                 \
        *second_out = mask & (mask - 1) ? best : second;                                                  \
        *mask_out = mask; *light_out = light; *heavy_out = heaviest; *options_out = options;             \
    }
TIED_ROW(tied_row64, int64_t)
TIED_ROW(tied_row128, i128)
#undef TIED_ROW

/* What tied_split writes for each row (tied_write: also the tokens of its lightest and heaviest best
   options into the caller's sums). */
typedef struct {
    int *hull_len;
    int32_t *floor_opt;
    int8_t *heavy;
    i128 *row_best;
    uint64_t *tied;
    i128 *gap;
    unsigned char *has_alt;
} TiedRows;

static inline void tied_write(const Problem *P, Py_ssize_t i, const TiedRows *out, i128 best, i128 second,
                              uint64_t mask, int light, int heaviest, int options, int64_t *light_w, int64_t *heavy_w) {
    out->hull_len[i] = -1;
    out->floor_opt[i] = light;
    out->heavy[i] = (int8_t)(heaviest == light ? -1 : heaviest);
    out->row_best[i] = best;
    out->tied[i] = mask;
    out->has_alt[i] = (unsigned char)(options > 1);
    out->gap[i] = options > 1 ? best - second : 0;
    *light_w += option_w(P, i, light);
    *heavy_w += option_w(P, i, heaviest);
}

#ifdef X86_VECTORS
/* tied_row64 with the row's levels (at most 7) and delete (lane k) in the lanes of an AVX-512 register:
   the same numbers, from reductions over the lanes in place of the branches (the lightest best option:
   the least of tokens * 64 + option, which puts a usable level of nothing before delete as tied_row64
   does; the heaviest: the most of tokens * 64 + 63 - option, the first of equals). */
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw"))) static inline void
tied_row_avx512(const Problem *P, Py_ssize_t i, __m512i vp, __m512i vq, i128 *best_out, i128 *second_out,
                uint64_t *mask_out, int *light_out, int *heavy_out, int *options_out) {
    Py_ssize_t k = P->k;
    const __mmask8 lanes = (__mmask8)((1u << k) - 1);
    __mmask8 ok = _mm_mask_cmpneq_epi8_mask(lanes, _mm_maskz_loadu_epi8(lanes, P->usable + i * k), _mm_setzero_si128());
    __m512i w = _mm512_maskz_loadu_epi64(lanes, P->tokens + i * k);
    __m512i v = _mm512_maskz_loadu_epi64(lanes, P->values + i * k);
    __m512i r = _mm512_sub_epi64(_mm512_mullo_epi64(vq, v), _mm512_mullo_epi64(vp, w));
    __mmask8 valid = (__mmask8)(ok | (1u << k));  /* delete: 0 tokens, 0 value (lane k, zeroed) */
    int64_t best = _mm512_mask_reduce_max_epi64(valid, r);
    __mmask8 tied = _mm512_mask_cmpeq_epi64_mask(valid, r, _mm512_set1_epi64(best));
    __mmask8 others = (__mmask8)(valid & ~tied);
    int64_t second = __builtin_popcount(tied) >= 2 ? best : others ? _mm512_mask_reduce_max_epi64(others, r) : 0;
    __m512i index = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), shifted = _mm512_slli_epi64(w, 6);
    uint64_t light = _mm512_mask_reduce_min_epu64(tied, _mm512_or_si512(shifted, index));
    __m512i back = _mm512_sub_epi64(_mm512_set1_epi64(63), index);
    uint64_t heavy = _mm512_mask_reduce_max_epu64(tied, _mm512_or_si512(shifted, back));
    *best_out = best;
    *second_out = second;
    *mask_out = tied;
    *light_out = (int)(light & 63);
    *heavy_out = 63 - (int)(heavy & 63);
    *options_out = 1 + __builtin_popcount(ok);
}

/* tied_row_avx512 for one row at P's lambda (tests: kernel.tied_rows) */
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw"))) static void
tied_row_vector(const Problem *P, Py_ssize_t i, i128 *best, i128 *second, uint64_t *mask, int *light, int *heavy,
                int *options) {
    tied_row_avx512(P, i, _mm512_set1_epi64(P->p), _mm512_set1_epi64(P->q), best, second, mask, light, heavy, options);
}

/* tied_split's pass with tied_row_avx512 (k at most 7) */
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw"))) static void tied_rows_avx512(const Problem *P, int bits,
                                                                                           const TiedRows *out,
                                                                                           int64_t *sums) {
    const __m512i vp = _mm512_set1_epi64(P->p), vq = _mm512_set1_epi64(P->q);
    int64_t light_w = 0, heavy_w = 0;
    /* a row in the registers needs its products in 64 bits and its tokens below 2**58 (the keys tokens * 64
       + option: at least 4 bits, whatever lambda's) */
    int vbits = bits < 4 ? 4 : bits;
    i128 best, second;
    uint64_t mask;
    int light, heaviest, options;
    if (vbits <= 61 && !(P->width >> (62 - vbits))) {  /* every row: a loop of its own (the tests a row cost 3-5 %) */
        for (Py_ssize_t i = 0; i < P->n; i++) {
            tied_row_avx512(P, i, vp, vq, &best, &second, &mask, &light, &heaviest, &options);
            tied_write(P, i, out, best, second, mask, light, heaviest, options, &light_w, &heavy_w);
        }
    } else {
        for (Py_ssize_t i = 0; i < P->n; i++) {
            if (vbits <= 61 && narrow_row(P, i, vbits))
                tied_row_avx512(P, i, vp, vq, &best, &second, &mask, &light, &heaviest, &options);
            else if (bits <= 61 && narrow_row(P, i, bits))
                tied_row64(P, i, &best, &second, &mask, &light, &heaviest, &options);
            else tied_row128(P, i, &best, &second, &mask, &light, &heaviest, &options);
            tied_write(P, i, out, best, second, mask, light, heaviest, options, &light_w, &heavy_w);
        }
    }
    sums[0] = light_w;
    sums[1] = heavy_w;
}
#endif

/* The tied split, where the sample found one efficiency lambda = p / q on both sides of the capacity:
   lambda is the split's if the rows' lightest options best at lambda fit the capacity and their
   heaviest do not (the increments more efficient than lambda lead to the lightest, those exactly as
   efficient to the heaviest). One pass without hulls: each row's best reduced value, the options as
   good (bit o), the best of the others (itself where two tie) and whether the row has another option
   (delete included): what the floor pass writes, whichever of the tied options the floor takes. The
   lightest best option goes to floor_opt, the heaviest to heavy (-1: the same option; among options
   of equal tokens the hull keeps the first). Returns 1 with the lightest options' tokens in *above, or
   0 where lambda is not the split's (the caller takes every hull). */
static int tied_split(const Problem *P, int *hull_len, int32_t *floor_opt, int8_t *heavy, i128 *row_best,
                      uint64_t *tied, i128 *gap, unsigned char *has_alt, int64_t *above) {
    Py_ssize_t n = P->n;
    const TiedRows out = {hull_len, floor_opt, heavy, row_best, tied, gap, has_alt};
    int64_t light_w = 0, heavy_w = 0;  /* the tokens of the rows' lightest and heaviest best options */
    uint64_t pq = (uint64_t)P->p | (uint64_t)P->q;
    int bits = pq ? 64 - __builtin_clzll(pq) : 0;
#ifdef X86_VECTORS
    if (grid_on() == 1 && P->k <= 7) {
        int64_t sums[2];
        tied_rows_avx512(P, bits, &out, sums);
        light_w = sums[0];
        heavy_w = sums[1];
        n = 0;  /* (every row done) */
    }
#endif
    for (Py_ssize_t i = 0; i < n; i++) {
        i128 best, second;
        uint64_t mask;
        int light, heaviest, options;
        if (bits <= 61 && narrow_row(P, i, bits))
            tied_row64(P, i, &best, &second, &mask, &light, &heaviest, &options);
        else tied_row128(P, i, &best, &second, &mask, &light, &heaviest, &options);
        tied_write(P, i, &out, best, second, mask, light, heaviest, options, &light_w, &heavy_w);
    }
    if (light_w > P->capacity || heavy_w <= P->capacity) return 0;
    *above = light_w;
    return 1;
}

/* Whether row i has a hull vertex after its option f (a heavier option worth more): the row offers an
   increment to the ranking of next increments. */
static inline int has_next(const Problem *P, Py_ssize_t i, int32_t f) {
    Py_ssize_t k = P->k;
    const int64_t *tw = P->tokens + i * k, *tv = P->values + i * k;
    const uint8_t *ok = P->usable + i * k;
    int64_t fw = option_w(P, i, f), fv = option_v(P, i, f);
    for (Py_ssize_t o = 0; o < k; o++)
        if (ok[o] && tw[o] > fw && tv[o] > fv) return 1;
    return 0;
}

/* Row i at lambda with its floor option f (fw tokens, fv value): its reduced value, the best of its
   other options (delete included), whether it has any, and the options exactly as good as f (bit o). */
static inline uint64_t at_lambda(const Problem *P, Py_ssize_t i, int32_t f, int64_t fw, int64_t fv, int narrow,
                                 i128 *best_out, i128 *second_out, int *any_out) {
    Py_ssize_t k = P->k;
    const int64_t p = P->p, q = P->q;
    uint64_t mask = (uint64_t)1 << f;
    const int64_t *tw = P->tokens + i * k, *tv = P->values + i * k;
    const uint8_t *ok = P->usable + i * k;
    int any = 0;
    i128 best, second = 0;
    /* in 64 bits, where no product or difference overflows (checked); else in 128 */
    int64_t best64, second64 = 0, x, y;
    int over = 0;
    if (narrow) {
        /* every usable level's products fit (Problem.width): no checks, and no branch on which
           levels count (a level not usable may wrap; it is not read) */
        best64 = q * fv - p * fw;
        second64 = INT64_MIN;
        for (Py_ssize_t o = 0; o < k; o++) {
            int64_t r = (int64_t)((uint64_t)q * (uint64_t)tv[o] - (uint64_t)p * (uint64_t)tw[o]);
            int counts = (o != f) & (ok[o] != 0);
            /* a mask, not a conditional: compiled as a branch it mispredicted about one row in two
               (weakly correlated and uncorrelated 10,000 records: 10-13 % of the solve) */
            int64_t take = -(int64_t)(counts & (r > second64));
            second64 = (r & take) | (second64 & ~take);
            any |= counts;
            mask |= (uint64_t)(counts & (r == best64)) << o;
        }
        goto done64;  /* (second is read only where some level counts) */
    }
    over = __builtin_mul_overflow(q, fv, &x) | __builtin_mul_overflow(p, fw, &y)
           | __builtin_sub_overflow(x, y, &best64);
    for (Py_ssize_t o = 0; o < k; o++) {
        if (o == f || !ok[o]) continue;
        int64_t r;
        over |= __builtin_mul_overflow(q, tv[o], &x) | __builtin_mul_overflow(p, tw[o], &y)
                | __builtin_sub_overflow(x, y, &r);
        if (!any || r > second64) second64 = r;
        any = 1;
        mask |= (uint64_t)(r == best64) << o;
    }
done64:
    if (!over) {
        best = best64;
        second = second64;
    } else {
        best = reduced(P, fw, fv);
        any = 0;
        mask = (uint64_t)1 << f;
        for (Py_ssize_t o = 0; o < k; o++) {
            if (o == f || !ok[o]) continue;
            i128 r = reduced(P, tw[o], tv[o]);
            if (!any || r > second) second = r;
            any = 1;
            mask |= (uint64_t)(r == best) << o;
        }
    }
    if (f != k) {  /* delete is an option of every row */
        if (!any || second < 0) second = 0;
        any = 1;
        mask |= (uint64_t)(best == 0) << k;
    }
    *best_out = best;
    *second_out = second;
    *any_out = any;
    return mask;
}

/* The floor raised along the ranked rows' next increments, most efficient first, while they
   fit: tokens and value into *w, *v (which hold the floor's); the levels into opt if given. */
static void raise_ranked(const Ranking *rk, const Problem *P, const int32_t *hull, const int *floor_pos,
                         int64_t capacity, int64_t *v, int64_t *w, int32_t *opt) {
    for (size_t a = 0; a < rk->len && *w < capacity; a++) {
        Py_ssize_t r = rk->rank[a].row;
        size_t at = (size_t)r * (size_t)(P->k + 1) + (size_t)floor_pos[r] + 1;
        int64_t ds = option_w(P, r, hull[at]) - option_w(P, r, hull[at - 1]);
        if (*w + ds > capacity) continue;
        if (opt) opt[r] = hull[at];
        *w += ds;
        *v += option_v(P, r, hull[at]) - option_v(P, r, hull[at - 1]);
    }
}

typedef struct {
    const Problem *P;
    int64_t *shifted;
    uint8_t *ok;
    int32_t *hull;
    int64_t *hw, *hv;
    Increment *inc, *band;
    int64_t count, count_fewer;  /* K at the capacity and at tokens - 1 */
    int64_t value, tokens, step;
    int proved;
} CutEval;

/* The count cut's bound at mu (a double, to steer the search); sets E->proved when it proves. */
static double cut_bound(CutEval *E, int64_t mu) {
    const Problem *P = E->P;
    Py_ssize_t n = P->n, k = P->k;
    Problem Q = *P;
    Q.values = E->shifted;
    Q.usable = E->ok;
    Q.width = UINT64_MAX;  /* other numbers */
    size_t cells = (size_t)n * (size_t)k;
    for (size_t j = 0; j < cells; j++) {
        E->shifted[j] = P->values[j] - mu;
        E->ok[j] = P->usable[j] && E->shifted[j] > 0;
    }
    size_t m = 0;
    int64_t total = 0;
    long on_hull = 0;
    int skip_usual = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        size_t at = (size_t)i * (size_t)(k + 1);
        int len = build_hull(&Q, i, E->hull + at, E->hw + at, E->hv + at, &on_hull, &skip_usual);
        for (int t = 1; t < len; t++) {
            E->inc[m] = increment(E->hw[at + t] - E->hw[at + t - 1], E->hv[at + t] - E->hv[at + t - 1]);
            total += E->inc[m].ds;
            m++;
        }
    }
    Increment split = {1, 0, 0.0};
    int64_t p = 0, q = 1, above;
    if (total > P->capacity && split_increment(E->inc, m, P->capacity, total, E->band, &split, &above)) {
        p = split.dv;
        q = split.ds;
    }
    i128 sum = 0;  /* each row's best at (lambda, mu), delete included */
    for (Py_ssize_t i = 0; i < n; i++) {
        i128 best = 0;
        for (Py_ssize_t o = 0; o < k; o++)
            if (E->ok[i * k + o]) {
                i128 r = (i128)q * E->shifted[i * k + o] - (i128)p * P->tokens[i * k + o];
                best = r > best ? r : best;
            }
        sum += best;
    }
    i128 mu_q = (i128)q * mu, bound = (i128)p * P->capacity + sum + mu_q * E->count;
    if (bound < (i128)q * ((i128)E->value + E->step)
        && (i128)p * (E->tokens - 1) + sum + mu_q * E->count_fewer < (i128)q * E->value)
        E->proved = 1;
    return (double)bound / (double)q;
}

/* The count cut, where the search passed its limit: no allocation keeps more than K(c) rows within
   c tokens (K: how many of the rows' lightest usable levels fit), so for every mu >= 0 the
   Lagrangian bound of the instance with mu taken off every kept option's value, plus mu K(c),
   bounds every allocation within c tokens. The LP bound is this at mu = 0; on a budget below the
   sum of the lightest levels (strongly correlated, v = w + 10: mu = 10, lambda = 1) it is the
   optimum, where the LP keeps a fraction of one more row and the search cannot close the gap.
   mu is found by bisection on the LP's kept count against K. Returns 1 when the bound proves
   (value, tokens) optimal: nothing worth value + step within the capacity, nothing worth value
   within tokens - 1; 0 when it does not; -1 on memory failure. */
static int count_cut_proves(const Problem *P, int64_t value, int64_t tokens, int64_t step) {
    Py_ssize_t n = P->n, k = P->k;
    int64_t *light = scratch(W_CUT_LIGHT, (size_t)n, sizeof(int64_t));
    int64_t *shifted = scratch(W_CUT_VALUES, (size_t)n * (size_t)k, sizeof(int64_t));
    uint8_t *ok = scratch(W_CUT_USABLE, (size_t)n * (size_t)k, 1);
    int32_t *hull = scratch(W_CUT_HULL, (size_t)n * (size_t)(k + 1), sizeof(int32_t));
    int64_t *hw = scratch(W_CUT_HW, 2 * (size_t)n * (size_t)(k + 1), sizeof(int64_t));
    Increment *inc = scratch(W_CUT_INC, 2 * (size_t)n * (size_t)(k + 1), sizeof(Increment));
    if (!light || !shifted || !ok || !hull || !hw || !inc) return -1;
    int64_t *hv = hw + (size_t)n * (size_t)(k + 1);
    Increment *band = inc + (size_t)n * (size_t)(k + 1);
    size_t keepable = 0;
    int64_t top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t m = INT64_MAX;
        for (Py_ssize_t o = 0; o < k; o++)
            if (P->usable[i * k + o]) {
                m = P->tokens[i * k + o] < m ? P->tokens[i * k + o] : m;
                top = P->values[i * k + o] > top ? P->values[i * k + o] : top;
            }
        if (m != INT64_MAX) light[keepable++] = m;
    }
    qsort(light, keepable, sizeof(int64_t), compare_rows);
    int64_t count_at[2] = {0, 0}, cap_at[2] = {P->capacity, tokens - 1}, used = 0;
    for (size_t a = 0; a < keepable; a++) {
        used += light[a];
        for (int b = 0; b < 2; b++) count_at[b] += used <= cap_at[b];
    }
    if ((size_t)count_at[0] == keepable || tokens <= 0) return 0;  /* the count binds nothing */
    CutEval E = {P, shifted, ok, hull, hw, hv, inc, band, count_at[0], count_at[1], value, tokens, step, 0};
    /* B(mu) is convex (a partial minimum over lambda of a jointly convex function): golden-section
       search over integers, each evaluation checked for the proof */
    int64_t a = 0, b = top;
    int64_t x1 = b - (int64_t)((double)(b - a) * 0.6180339887498949), x2 = a + (int64_t)((double)(b - a) * 0.6180339887498949);
    double f1 = cut_bound(&E, x1), f2 = cut_bound(&E, x2);
    for (int round = 0; round < 128 && !E.proved && b - a > 2; round++) {
        if (f1 <= f2) {
            b = x2; x2 = x1; f2 = f1;
            x1 = b - (int64_t)((double)(b - a) * 0.6180339887498949);
            if (x1 >= x2) x1 = x2 - 1;
            if (x1 <= a) x1 = a + 1 < x2 ? a + 1 : a;
            f1 = cut_bound(&E, x1);
        } else {
            a = x1; x1 = x2; f1 = f2;
            x2 = a + (int64_t)((double)(b - a) * 0.6180339887498949);
            if (x2 <= x1) x2 = x1 + 1;
            if (x2 >= b) x2 = b - 1 > x1 ? b - 1 : b;
            f2 = cut_bound(&E, x2);
        }
    }
    if (b - a <= 2)
        for (int64_t mu = a; mu <= b && !E.proved; mu++) cut_bound(&E, mu);
    return E.proved;
}

/* Returns 0 on success, 1 when phase 1 exceeded its limit, 2 on an internal inconsistency,
   -1 on memory failure. */
/* The tail's suffix sums over the free rows j.. (see solve, phase 2), held for j >= have, extended
   down to s: the least and most tokens and value of each row's kept options, and the sum of the
   rows' bests. Returns the new have (s, or have if already below). */
static __attribute__((noinline)) size_t suffix_to(const Problem *P, const int64_t *free_rows,
                                                  const uint64_t *keep_mask, const i128 *row_best, size_t have,
                                                  size_t s, int64_t *min_w, int64_t *max_w, int64_t *min_v,
                                                  int64_t *max_v, i128 *tied_best) {
    while (have > s) {
        have--;
        Py_ssize_t r = free_rows[have];
        int64_t aw = INT64_MAX, bw = INT64_MIN, av = INT64_MAX, bv = INT64_MIN;
        for (uint64_t m = keep_mask[r]; m; m &= m - 1) {
            int o = __builtin_ctzll(m);
            int64_t w = option_w(P, r, o), v = option_v(P, r, o);
            aw = w < aw ? w : aw;
            bw = w > bw ? w : bw;
            av = v < av ? v : av;
            bv = v > bv ? v : bv;
        }
        min_w[have] = min_w[have + 1] + aw; max_w[have] = max_w[have + 1] + bw;
        min_v[have] = min_v[have + 1] + av; max_v[have] = max_v[have + 1] + bv;
        tied_best[have] = tied_best[have + 1] + row_best[r];
    }
    return have;
}

/* lambda = p / q in lowest terms: the same p and q whichever increment of that efficiency the split
   returned (with or without the band) */
static void lowest_terms(Problem *P) {
    int64_t a = P->p, b = P->q;
    while (b) { int64_t t = a % b; a = b; b = t; }
    if (a > 1) { P->p /= a; P->q /= a; }
}

/* What solve reports: the integers exactly (a value past 2**53 would not survive a double), and the
   LP bound U(lambda) as a double. v: p, q, (unused), V*, W*, hull levels, LP-dominated levels (both -1
   where a band was taken), rows searched, free rows, tie rule applied, search states, tie-rule states,
   tail rows, rows given a hull. */
typedef struct { int64_t v[14]; double upper; } Info;

/* Row i's most valuable usable level, the lightest of those, the first of equals (k: delete, no level
   usable): its value, tokens, and whether another level is as valuable; *bad where a usable level has
   negative tokens or no value (not where the width says none has: trusted). */
static inline int best_level(const Problem *P, Py_ssize_t i, int trusted, int64_t *value, int64_t *tokens,
                             int *ties_out, int *bad_out) {
    Py_ssize_t k = P->k;
    const int64_t *tw = P->tokens + i * k, *tv = P->values + i * k;
    const uint8_t *ok = P->usable + i * k;
    int64_t top = 0, light = 0;
    int pick = (int)k, bad = 0, ties = 0;
    for (Py_ssize_t o = 0; o < k; o++) {
        int64_t w = tw[o], v = tv[o];
        int on = ok[o] != 0;
        if (!trusted) bad |= on & ((w < 0) | (v <= 0));
        int better = on & (v > top), same = on & (v == top), lighter = better | (same & (w < light));
        ties = better ? 0 : ties | same;
        pick = lighter ? (int)o : pick;
        light = lighter ? w : light;
        top = better ? v : top;
    }
    *value = top; *tokens = light; *ties_out = ties; *bad_out = bad;
    return pick;
}

#define FITS_SAMPLE 64  /* rows whose best levels say whether to try them all before the hulls */
#define FITS_SURE 0.8   /* ... where they take at most this share of the budget */
#define FITS_VECTOR 1.25 /* ... or this share where the best levels come from AVX-512 and no band's grid is
                            drawn (every row gets a hull unless the tied split answers): a pass that finds
                            the budget binds costs a few percent of the hulls it may spare (with the grid,
                            a fifth of the solve) */

/* The width (the scaling's, or raw_width's) says no usable level has negative tokens nor a value of 0 or
   less. */
static inline int width_trusted(const Problem *P) { return !(P->width >> 62); }

#ifdef X86_VECTORS
/* fits_all's first pass, a row's levels (at most 8) in the lanes of an AVX-512 register: best_level's
   pick from reductions (the most valuable usable level; of those the least tokens * 64 + level, the
   lightest and the first of equals), for rows best_levels_vector admits. Returns 0, or -1 as soon as
   the picks' tokens pass the capacity (or their values 64 bits). */
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw"))) static int
best_levels_avx512(const Problem *P, int64_t *choice, int64_t *used_out, int64_t *worth_out) {
    Py_ssize_t n = P->n, k = P->k;
    const __mmask8 lanes = (__mmask8)((1u << k) - 1);
    const __m512i index = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    int64_t used = 0, worth = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        __mmask8 ok = _mm_mask_cmpneq_epi8_mask(lanes, _mm_maskz_loadu_epi8(lanes, P->usable + i * k),
                                                _mm_setzero_si128());
        int64_t pick = k, top = 0, light = 0;
        if (ok) {
            __m512i v = _mm512_maskz_loadu_epi64(ok, P->values + i * k);
            __m512i w = _mm512_maskz_loadu_epi64(ok, P->tokens + i * k);
            top = _mm512_mask_reduce_max_epi64(ok, v);
            __mmask8 best = _mm512_mask_cmpeq_epi64_mask(ok, v, _mm512_set1_epi64(top));
            uint64_t key = _mm512_mask_reduce_min_epu64(best, _mm512_or_si512(_mm512_slli_epi64(w, 6), index));
            pick = (int64_t)(key & 63) | (int64_t)(__builtin_popcount(best) > 1) << 32;
            light = (int64_t)(key >> 6);
        }
        if (__builtin_add_overflow(worth, top, &worth) | ((used += light) > P->capacity)) return -1;
        choice[i] = pick;
    }
    *used_out = used;
    *worth_out = worth;
    return 0;
}
#endif

/* Whether fits_all's first pass takes AVX-512: at most 8 levels, trusted (no check of a level's signs),
   tokens below 2**58 (the keys tokens * 64 + level), and the CPU's (the grid's switch). */
static inline int best_levels_vector(const Problem *P) {
    return P->k <= 8 && !(P->width >> 58) && grid_on() == 1;
}

/* Whether the budget likely binds no row: FITS_SAMPLE rows spread over the input (every row of fewer),
   their bests' tokens scaled to all rows, within FITS_SURE of the budget (FITS_VECTOR where AVX-512 gives
   the bests and no band's grid is drawn). A pass that finds the budget binds stops only once the
   rows' bests pass it, near the end where they take about the budget (the uncorrelated class: with the
   band a fifth of the solve, wasted), so the rest wait for the hulls or the band, which tell it exactly
   (solve); a sample that misjudges costs time, never the answer. */
static int fits_likely(const Problem *P) {
    Py_ssize_t n = P->n, count = n < FITS_SAMPLE ? n : FITS_SAMPLE, step = n / (count ? count : 1);
    int trusted = width_trusted(P), ties, bad;
    int64_t sample = 0, v, w;
    for (Py_ssize_t a = 0; a < count; a++) {
        best_level(P, a * step, trusted, &v, &w, &ties, &bad);
        sample += w;
    }
    double share = best_levels_vector(P) && P->banded != 1 ? FITS_VECTOR : FITS_SURE;
    return (double)sample * ((double)n / (double)(count ? count : 1)) <= share * (double)P->capacity;
}

/* Where the budget binds no row: each row's most valuable level, the lightest of those, the first of
   equals (delete where no level is usable), fits with every other row's. Then the LP split is at
   lambda = 0 (each row at its hull's top vertex), that allocation is the optimum (V*, W*) and the only
   one worth it (each row at its own best value and fewest tokens), so it is also the tie rule's; the
   reduction keeps what the bound at lambda = 0 keeps: every level as valuable as its row's best, in
   rows where two are. Writes choice, keep and core and returns the free rows, or -1 where the budget
   binds (or a usable level is worth nothing or has negative tokens: raw arrays; the caller goes on). */
static long fits_all(const Problem *P, int64_t *choice, uint8_t *keep, int64_t *core, int64_t *value, int64_t *tokens) {
    Py_ssize_t n = P->n, k = P->k;
    int64_t used = 0, worth = 0, v, w;
    int ties, bad, trusted = width_trusted(P);
    /* choice[i] holds the pick and, past bit 32, whether another level is as valuable, until the
       second pass */
    Py_ssize_t first = 0;
#ifdef X86_VECTORS
    if (best_levels_vector(P)) {
        if (best_levels_avx512(P, choice, &used, &worth) < 0) return -1;
        first = n;
    }
#endif
    for (Py_ssize_t i = first; i < n; i++) {
        int pick = best_level(P, i, trusted, &v, &w, &ties, &bad);
        /* (raw arrays may hold sums past 64 bits: the full path answers them) */
        if (bad | __builtin_add_overflow(used, w, &used) | __builtin_add_overflow(worth, v, &worth)
            || used > P->capacity)
            return -1;
        choice[i] = pick | (int64_t)ties << 32;
    }
    long n_free = 0;
    memset(keep, 0, (size_t)n * (size_t)(k + 1));
    for (Py_ssize_t i = 0; i < n; i++) {
        int pick = (int)(choice[i] & 0xFFFFFFFF), ties = (int)(choice[i] >> 32);
        uint8_t *row_keep = keep + (size_t)i * (size_t)(k + 1);
        row_keep[pick] = 1;
        choice[i] = pick == k ? -1 : pick;
        if (!ties) continue;
        const int64_t *tv = P->values + i * k;
        const uint8_t *ok = P->usable + i * k;
        for (Py_ssize_t o = 0; o < k; o++) row_keep[o] |= ok[o] && tv[o] == tv[pick];
        core[n_free++] = i;
    }
    *value = worth;
    *tokens = used;
    return n_free;
}

static int solve(Problem *P, int64_t *choice, uint8_t *keep, int64_t *core, int bounded_ties, Info *info) {
    Py_ssize_t n = P->n, k = P->k;
    int rc = -1;
    int32_t *hull = NULL, *floor_opt = NULL;
    int *hull_len = NULL, *floor_pos = NULL;
    Increment *inc = NULL;
    Candidate *cand = NULL;
    i128 *gap = NULL;
    unsigned char *has_alt = NULL;
    Vec states = ws_states, layer_start = ws_layer_start, pairs = ws_pairs, pair_start = ws_pair_start;
    states.len = layer_start.len = pairs.len = pair_start.len = 0;
    int32_t *greedy_opt = NULL;
    unsigned char *searched = NULL;
    static Ranking rank_next, rank_prev;

    hull = scratch(W_HULL, (size_t)n * (size_t)(k + 1), sizeof(int32_t));
    hull_len = scratch(W_HULL_LEN, (size_t)n, sizeof(int));
    floor_pos = scratch(W_FLOOR_POS, (size_t)n, sizeof(int));
    floor_opt = scratch(W_FLOOR_OPT, (size_t)n, sizeof(int32_t));
    inc = scratch(W_INC, (size_t)n * (size_t)(k + 1), sizeof(Increment));
    gap = scratch(W_GAP, (size_t)n, sizeof(i128));
    has_alt = scratch(W_HAS_ALT, (size_t)n, 1);
    /* each row's best reduced value, and the options exactly as good (bit o: option o) */
    i128 *row_best = scratch(W_ROW_BEST, (size_t)n, sizeof(i128));
    uint64_t *tied = scratch(W_TIED_MASK, (size_t)n, sizeof(uint64_t));
    if (!hull || !hull_len || !floor_pos || !floor_opt || !inc || !gap || !has_alt || !row_best || !tied) goto done;

    /* the sums of tokens below (of levels that fit the capacity, over all rows) stay in 64 bits */
    if ((i128)n * P->capacity >= ((i128)1 << 62)) return 1;
    /* (not for the optimum alone, bounded_ties < 0: no reduction nor tie rule there) */
    int shortcut = P->shortcut && bounded_ties >= 0;
    if (shortcut && fits_likely(P)) {
        int64_t value, tokens;
        long n_free = fits_all(P, choice, keep, core, &value, &tokens);
        if (n_free >= 0) {  /* no hull taken: their counts -1 */
            *info = (Info){{0, 1, 0, value, tokens, -1, -1, 0, n_free, 1, 0, 0, 0, 0}, (double)value};
            rc = 0;
            goto done;
        }
    }
    /* 0. every allocation's tokens are a multiple of g, the gcd of the usable levels' tokens: the
       capacity rounds down to one (an exact fill of the room is otherwise impossible, e.g. even
       tokens and an odd budget, and the search would have to prove it state by state) */
    {
        int64_t g = 0;
        size_t cells = (size_t)n * (size_t)k;
        for (size_t j = 0; j < cells && g != 1; j++) {
            if (!P->usable[j]) continue;
            int64_t a = P->tokens[j], b = g;
            while (b) { int64_t t = a % b; a = b; b = t; }
            g = a;
        }
        if (g > 1) P->capacity -= P->capacity % g;
    }
    /* 1. hulls and increments (or the band's: see banded_split) */
    long on_hull = 0, usable_levels = 0;
    size_t m = 0;
    int64_t total = 0;
    Increment split = {1, 0, 0.0}, top = split, bottom = split;
    int64_t above = 0;  /* the tokens of the increments strictly more efficient than lambda */
    int8_t *second_opt = NULL;
    int32_t *order = NULL;  /* with the band: the rows in it, then the others (each in input order, the
                               others from the back) */
    Py_ssize_t in_band = 0;
    int banded = 0;
    if (P->banded) {
        second_opt = scratch(W_SECOND, (size_t)n, 1);
        if (!second_opt) goto done;
        order = scratch(W_ORDER, (size_t)n, sizeof(int32_t));
        if (!order) goto done;
        banded = banded_split(P, hull, hull_len, floor_opt, second_opt, inc, &top, &bottom, &split, &above, order,
                              &in_band);
        if (banded < 0) goto done;
        if (banded == 2) split = top;  /* one efficiency around the capacity */
        if (banded) {
            P->p = split.dv;
            P->q = split.ds;
            lowest_terms(P);  /* (tied_split's numbers are in lambda's lowest terms, as the floor pass's) */
            /* is that efficiency the split's? */
            if (banded == 2 && !tied_split(P, hull_len, floor_opt, second_opt, row_best, tied, gap, has_alt, &above))
                banded = 0;
        }
        if (banded) {
            on_hull = usable_levels = -1;  /* not counted */
            goto split_taken;
        }
    }
    {
        size_t cells = (size_t)n * (size_t)k;
        for (size_t j = 0; j < cells; j++) usable_levels += P->usable[j] != 0;
    }
    int skip_usual = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* a vertex's tokens and value are its level's (delete: 0, 0): only the levels are kept */
        size_t at = (size_t)i * (size_t)(k + 1);
        int64_t hw[64], hv[64];
        int len = build_hull(P, i, hull + at, hw, hv, &on_hull, &skip_usual);
        hull_len[i] = len;
        for (int t = 1; t < len; t++) {
            inc[m] = increment(hw[t] - hw[t - 1], hv[t] - hv[t - 1]);
            total += inc[m].ds;
            m++;
        }
    }
    /* the hulls' top vertices fit: lambda = 0, the shortcut's answer (where fits_likely did not try it) */
    if (shortcut && total <= P->capacity) {
        int64_t value, tokens;
        long n_free = fits_all(P, choice, keep, core, &value, &tokens);
        if (n_free >= 0) {
            *info = (Info){{0, 1, 0, value, tokens, on_hull, usable_levels - on_hull, 0, n_free, 1, 0, 0, 0, n},
                           (double)value};
            rc = 0;
            goto done;
        }
    }
    /* 2. the LP split and the floor */
    Increment *band = scratch(W_BAND, m, sizeof(Increment));
    if (!band) goto done;
    if (total > P->capacity && split_increment(inc, m, P->capacity, total, band, &split, &above)) {
        P->p = split.dv;
        P->q = split.ds;
    } else {
        P->p = 0;
        P->q = 1;
        above = total;  /* every increment gains value: all of them */
    }
    lowest_terms(P);
split_taken:  /* (the band's lambda is in lowest terms already) */
    /* the floor: each row at its heaviest hull vertex reached by increments strictly more
       efficient than lambda (a row's increments are strictly less efficient one after the other,
       so those are the increments above the split, whose tokens the split summed: `above`); then,
       in input order, increments exactly as efficient as lambda while they fit: still each row's
       best level at lambda, and much closer to the capacity when many increments tie at lambda
       (Pisinger's correlated classes). Each row's best value at lambda, its gap to the next best
       option, the options as good, and the increments around its floor, ranked for Pisinger's
       bound, in the same pass. */
    int64_t floor_w = above, floor_v = 0, first_w = 0;
    searched = scratch(W_SEARCHED, (size_t)n, 1);
    if (!searched) goto done;
    memset(searched, 0, (size_t)n);
    memset(&rank_next, 0, sizeof rank_next);
    memset(&rank_prev, 0, sizeof rank_prev);
    rank_next.largest = 1;
    i128 upper = (i128)P->p * P->capacity;
    const int64_t p = P->p, q = P->q;
    /* every usable level's products with p and q fit 64 bits (at_lambda then needs no checks) */
    int lambda_bits = 64 - __builtin_clzll((uint64_t)p | (uint64_t)q);
    int narrow = lambda_bits <= 61 && !(P->width >> (62 - lambda_bits));
    /* Rows left without a hull (banded, tied) get none here either where the rankings of the increments
       around the floor would not take theirs: a row offers an increment after its floor (if it has one)
       and one into it (unless the floor is delete); once a ranking is full and its outside extreme is
       at least as extreme as every increment such rows can offer (less efficient than bottom, more than
       top, outside the band; at most, at least lambda at a floor best at lambda), it turns them away and
       changes nothing (sat_next, sat_prev). Where the band reaches down to lambda = 0, a row outside it is
       at its one most valuable level and offers no increment after it: none asks (uncorrelated levels
       whose bests about fill the budget: the rankings never filled, and every row outside was asked). */
    int sat_next = banded == 1 && bottom.dv == 0, sat_prev = 0, usual = 0;
    long uncounted = 0;
    const Increment at_split = increment(q, p), *next_limit = banded == 2 ? &at_split : &bottom,
                    *prev_limit = banded == 2 ? &at_split : &top;
    /* With the band, the rows in it (with a hull) go first, then the others: the rankings then fill from
       the band before any row outside it asks (in input order a quarter of those did, each getting a
       hull). The floor is the same: only rows in the band can take the second step below (the others
       have no increment as efficient as lambda), in input order either way. */
    int by_band = banded == 1, far = by_band && far_rows(P);
    for (Py_ssize_t c = 0; c < n; c++) {
        Py_ssize_t i = by_band ? band_order(order, in_band, n, c) : c;
        size_t at = (size_t)i * (size_t)(k + 1);
        /* in the band's order the rows' levels come out of input order, past the reach of the hardware's
           prefetch (100,000 records: the loads of the rows outside the band were a third of this pass) */
        if (far && c + PREFETCH_ROWS < n) {
            Py_ssize_t c2 = c + PREFETCH_ROWS, j = band_order(order, in_band, n, c2);
            prefetch_row(P, j);
            if (c2 < in_band) {  /* (its hull too) */
                __builtin_prefetch(hull_len + j);
                __builtin_prefetch(hull + (size_t)j * (size_t)(k + 1));
            }
        }
        if (hull_len[i] < 0) {
            /* the floor: the band's row is at its one best option; a tied row at its lightest best,
               or its heaviest as the second step below takes it (the increment between is lambda's) */
            int32_t f = floor_opt[i], last = f;
            int64_t fw = option_w(P, i, f), step = 0;
            if (banded == 2 && p > 0 && floor_w < P->capacity && second_opt[i] >= 0
                && floor_w + option_w(P, i, second_opt[i]) - fw <= P->capacity) {
                last = second_opt[i];
                step = option_w(P, i, last) - fw;
            }
            if ((sat_next || !has_next(P, i, last)) && (sat_prev || last == k)) {
                first_w += fw;
                floor_w += step;
                floor_v += option_v(P, i, last);
                floor_opt[i] = last;
                floor_pos[i] = -1;
                if (banded == 2) {  /* tied_split wrote the row's numbers */
                    upper += row_best[i];
                    continue;
                }
                /* outside the band: its floor is its unique best option at lambda; the option second to it
                   at both ends of the band is second at lambda too (the differences are linear in lambda) */
                int64_t fv = option_v(P, i, f);
                int s = second_opt[i], any;
                i128 best, second;
                uint64_t mask;
                if (s == -2) mask = at_lambda(P, i, f, fw, fv, narrow, &best, &second, &any);
                else {
                    any = s >= 0;
                    int64_t sw = any ? option_w(P, i, s) : 0, sv = any ? option_v(P, i, s) : 0;
                    if (narrow) {  /* (the products fit 64 bits) */
                        best = q * fv - p * fw;
                        second = q * sv - p * sw;
                    } else {
                        best = reduced(P, fw, fv);
                        second = reduced(P, sw, sv);
                    }
                    mask = (uint64_t)1 << f;
                }
                upper += best;
                row_best[i] = best;
                tied[i] = mask;
                has_alt[i] = (unsigned char)any;
                gap[i] = any ? best - second : 0;
                continue;
            }
            int64_t hw[64], hv[64];
            hull_len[i] = build_hull(P, i, hull + at, hw, hv, &uncounted, &usual);
        }
        int len = hull_len[i], t = 0;
        int64_t hw[64], hv[64];  /* the vertices' tokens and values, from their levels */
        for (int a = 0; a < len; a++) {
            int32_t o = hull[at + (size_t)a];
            hw[a] = option_w(P, i, o);
            hv[a] = option_v(P, i, o);
        }
        while (t + 1 < len && compare_products(hv[t + 1] - hv[t], q, p, hw[t + 1] - hw[t]) > 0) t++;
        first_w += hw[t];
        /* the floor's second step (see above) */
        if (p > 0 && floor_w < P->capacity && t + 1 < len) {
            int64_t ds = hw[t + 1] - hw[t], dv = hv[t + 1] - hv[t];
            if (compare_products(dv, q, p, ds) == 0 && floor_w + ds <= P->capacity) {
                t++;
                floor_w += ds;
            }
        }
        floor_pos[i] = t;
        int32_t f = hull[at + t];
        floor_opt[i] = f;
        int64_t fw = hw[t], fv = hv[t];
        floor_v += fv;
        int any;
        i128 best, second;
        uint64_t mask = at_lambda(P, i, f, fw, fv, narrow, &best, &second, &any);
        upper += best;
        row_best[i] = best;
        tied[i] = mask;
        has_alt[i] = (unsigned char)any;
        gap[i] = any ? best - second : 0;
        if (t + 1 < len) {
            Increment xi = increment(hw[t + 1] - fw, hv[t + 1] - fv);
            rank_offer_row(&rank_next, -xi.eff, i, &xi);
        }
        if (t > 0) {
            Increment xi = increment(fw - hw[t - 1], fv - hv[t - 1]);
            rank_offer_row(&rank_prev, xi.eff, i, &xi);
        }
        if (banded && !sat_next)
            sat_next = rank_next.len == RANKED && rank_next.has_outside
                       && compare_efficiency(&rank_next.outside, next_limit) >= 0;
        if (banded && !sat_prev)
            sat_prev = rank_prev.len == RANKED && rank_prev.has_outside
                       && compare_efficiency(&rank_prev.outside, prev_limit) <= 0;
    }
    if (first_w != above) { rc = 2; goto done; }  /* a bug: the split's tokens are not the floor's */
    rank_finish(&rank_next);
    rank_finish(&rank_prev);
    /* 3. phase 1: the optimum (value, then tokens) */
    int64_t inc_v = floor_v, inc_w = floor_w;
    /* a first incumbent, two ways: the floor raised along the most efficient next increments
       (the ranked rows, most efficient first) while they fit, which only sets the value the
       candidate rows must be able to reach; then the floor with each candidate row (closest
       first) raised to its most valuable level that still fits. The better one is kept. */
    greedy_opt = scratch(W_GREEDY, (size_t)n, sizeof(int32_t));
    if (!greedy_opt) goto done;
    int64_t ranked_v = floor_v, ranked_w = floor_w;
    raise_ranked(&rank_next, P, hull, floor_pos, P->capacity, &ranked_v, &ranked_w, NULL);
    inc_v = ranked_v;  /* for the candidate filter */
    size_t n_cand = 0;
    cand = scratch(W_CAND, (size_t)n, sizeof(Candidate));
    if (!cand) goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        if (has_alt[i] && upper - gap[i] >= (i128)P->q * inc_v) {
            /* (a gap within 64 bits converts as the same double without the 128-bit routine) */
            i128 g = gap[i];
            cand[n_cand].gap = g == (i128)(int64_t)g ? (double)(int64_t)g : (double)g;
            cand[n_cand].row = i;
            n_cand++;
        }
    /* rows are taken in order of their gap; sorting all of them would cost more than the whole
       search, so the order is built a chunk at a time as the search reaches it */
    size_t sorted;  /* (every candidate passes the filter now) */
    if (riffle_tied && n_cand > TIED_SELECT_ROWS && select_tied(cand, n_cand, FIRST_CHUNK, 1)) {
        /* the first chunk of many tied candidates by select_tied, the rest riffled into a second buffer,
           which becomes the candidates' */
        Candidate *spare = scratch(W_SPARE, n_cand, sizeof(Candidate));
        if (!spare) goto done;
        memcpy(spare, cand, FIRST_CHUNK * sizeof(Candidate));
        riffle(cand + FIRST_CHUNK, n_cand - FIRST_CHUNK, spare + FIRST_CHUNK);
        cand = spare;
        qsort(cand, FIRST_CHUNK, sizeof(Candidate), compare_candidates);
        sorted = FIRST_CHUNK;
    } else sorted = sort_chunk(cand, 0, n_cand);
    memcpy(greedy_opt, floor_opt, sizeof(int32_t) * (size_t)n);
    inc_v = floor_v; inc_w = floor_w;
    for (size_t c = 0; c < n_cand && inc_w < P->capacity; c++) {  /* the sorted chunk first */
        Py_ssize_t r = cand[c].row;
        int32_t now = greedy_opt[r], pick = now;
        int64_t cw = option_w(P, r, now), cv = option_v(P, r, now), pv = cv, pw = cw;
        for (Py_ssize_t o = 0; o <= k; o++) {
            if (!option_ok(P, r, o)) continue;
            int64_t w = option_w(P, r, o), v = option_v(P, r, o);
            if (inc_w - cw + w <= P->capacity && (v > pv || (v == pv && w < pw))) {
                pick = (int32_t)o; pv = v; pw = w;
            }
        }
        greedy_opt[r] = pick;
        inc_w += pw - cw;
        inc_v += pv - cv;
    }
    if (ranked_v > inc_v || (ranked_v == inc_v && ranked_w < inc_w)) {
        memcpy(greedy_opt, floor_opt, sizeof(int32_t) * (size_t)n);
        inc_v = floor_v; inc_w = floor_w;
        raise_ranked(&rank_next, P, hull, floor_pos, P->capacity, &inc_v, &inc_w, greedy_opt);
    }
    /* a third, for the correlated classes, where the bound is usually reached: the optimum then
       keeps every row at an option exactly as good at lambda as its floor and fills the room the
       floor leaves exactly (a subset sum over those ties). The sums of tokens moved that rows with a
       gap of 0 reach (in candidate order, each row moved at most once to another tied option; sums
       kept within FILL_SLACK of [0, room]), until one is the room: the incumbent is then worth the
       bound, and the search only has to confirm it. */
    int64_t fill_room = P->capacity - floor_w;
    if (P->p > 0 && fill_room > 0 && fill_room <= FILL_ROOM) {
        /* a bitset of the sums reached (bit b: lo_x + b tokens moved), shifted once per tied option
           of each row over the words between the lowest and highest bit set so far; a bit's first
           reacher (row, option) is recorded as it is set, and the sums a row shifts are those before
           it (one move per row), so the reachers along the path to the room are distinct rows */
        int64_t lo_x = -FILL_SLACK, hi_x = fill_room + FILL_SLACK;
        size_t span = (size_t)(hi_x - lo_x) + 1, words = (span + 63) / 64;
        int32_t *from_row, *from_opt;
        uint64_t *now = reach_buffers(span, words, &from_row, &from_opt);
        if (!now) goto done;
        uint64_t *before = now + words;
        int64_t zero = -lo_x, target = fill_room - lo_x;  /* bit positions of 0 and of the room */
        now[zero / 64] |= (uint64_t)1 << (zero % 64);
        int64_t w_lo = zero / 64, w_hi = zero / 64;  /* words holding set bits */
        /* rows in candidate order, alternating between rows that can move up (take tokens) and
           rows that can only move down: the room needs both kinds, and one kind may be rare (a
           budget near the top: only the rows the floor could not raise can take tokens) */
        size_t cursor[2] = {0, 0}, work = 0;
        int side = 0, hit = 0, exhausted[2] = {0, 0};
        while (!hit && work < FILL_WORK && !(exhausted[0] && exhausted[1])) {
            if (exhausted[side]) side ^= 1;
            /* the next row of this side: gap 0 and a tied move up (side 0) or only down (side 1) */
            Py_ssize_t r = -1;
            int32_t f = 0;
            int64_t fw = 0;
            while (cursor[side] < n_cand) {
                Py_ssize_t row = cand[cursor[side]++].row;
                if (gap[row] != 0) continue;
                int32_t ff = floor_opt[row];
                int64_t ffw = option_w(P, row, ff);
                int up = 0, down = 0;
                for (uint64_t m = tied[row] & ~((uint64_t)1 << ff); m; m &= m - 1) {
                    int64_t d = option_w(P, row, __builtin_ctzll(m)) - ffw;
                    up |= d > 0;
                    down |= d < 0;
                }
                if (side == 0 ? up : down && !up) { r = row; f = ff; fw = ffw; break; }
            }
            if (r < 0) { exhausted[side] = 1; continue; }
            side ^= 1;
            size_t nw = (size_t)(w_hi - w_lo + 1);
            memcpy(before + w_lo, now + w_lo, nw * sizeof(uint64_t));
            int64_t new_lo = w_lo, new_hi = w_hi;
            for (Py_ssize_t o = 0; o <= k && !hit; o++) {
                if (o == f || !((tied[r] >> o) & 1)) continue;
                int64_t d = option_w(P, r, o) - fw;
                if (d == 0 || d > hi_x - lo_x || d < lo_x - hi_x) continue;
                work += shift_reach(before, now, (int64_t)words, span, w_lo, w_hi, d, (int32_t)r, (int32_t)o,
                                    from_row, from_opt, &new_lo, &new_hi);
                hit = (now[target / 64] >> (target % 64)) & 1;
            }
            w_lo = new_lo; w_hi = new_hi;
        }
        if (hit) {
            memcpy(greedy_opt, floor_opt, sizeof(int32_t) * (size_t)n);
            inc_v = floor_v; inc_w = floor_w;
            for (int64_t y = target; y != zero;) {
                Py_ssize_t r = from_row[y];
                int32_t o = from_opt[y];
                int64_t fw = option_w(P, r, floor_opt[r]), fv = option_v(P, r, floor_opt[r]);
                greedy_opt[r] = o;
                inc_w += option_w(P, r, o) - fw;
                inc_v += option_v(P, r, o) - fv;
                y -= option_w(P, r, o) - fw;
            }
        }
    }

    /* Where no incumbent reaches the bound, the tied fill: allocations of options tied at lambda
       (each row's best, and any other exactly as good) are worth (sum of bests + p W) / q, so the
       best of them has the most tokens W within the capacity, a subset sum over the rows with tied
       alternatives. From a reference of each such row at its lightest tied option (dir 1: gains,
       the room above them) or its heaviest (dir -1: losses, the tokens above the capacity), every
       other tied option moves tokens one way, so a bitset of the sums rows reach is exact within
       its window (sums only grow). When every untied option of every row loses more at lambda
       than the bound's slack at that allocation, no allocation is worth more and only those with
       its tokens are worth as much: (V*, W*) is proven without the search, which on such instances
       (a budget just below every row's heaviest level, or just above every lightest: no exact
       fill) cannot prune a state, all of them tying at lambda. */
    int proven = 0;
    if (P->p > 0 && (i128)P->q * inc_v < upper) {
        /* rows with tied alternatives have gap 0 and are all candidates: the references differ from
           the floor only there */
        int64_t t_lo = floor_w, t_hi = floor_w;
        for (size_t c = 0; c < n_cand; c++) {
            Py_ssize_t i = cand[c].row;
            if (gap[i] != 0) continue;
            int64_t fw = option_w(P, i, floor_opt[i]), lo = fw, hi = fw;
            for (uint64_t m = tied[i]; m; m &= m - 1) {
                int64_t w = option_w(P, i, __builtin_ctzll(m));
                lo = w < lo ? w : lo;
                hi = w > hi ? w : hi;
            }
            t_lo += lo - fw;
            t_hi += hi - fw;
        }
        int64_t room = P->capacity - t_lo, need = t_hi - P->capacity;
        int dir = 0;
        if (t_lo == t_hi) dir = 0;  /* no tied option moves tokens: the floor is all it gives */
        else if (room >= 0 && need <= 0) dir = -1, need = 0;  /* every row at its heaviest tied option fits */
        else if (room >= 0 && room <= FILL_ROOM && (room <= need || need > FILL_ROOM)) dir = 1;
        else if (room >= 0 && need <= FILL_ROOM) dir = -1;
        if (dir) {
            int32_t *ref = scratch(W_REF, (size_t)n, sizeof(int32_t));
            if (!ref) goto done;
            memcpy(ref, floor_opt, sizeof(int32_t) * (size_t)n);
            for (size_t c = 0; c < n_cand; c++) {
                Py_ssize_t i = cand[c].row;
                if (gap[i] != 0) continue;
                int32_t pick = floor_opt[i];
                int64_t pw = option_w(P, i, pick);
                for (uint64_t m = tied[i]; m; m &= m - 1) {
                    int o = __builtin_ctzll(m);
                    if (dir * (pw - option_w(P, i, o)) > 0) { pick = (int32_t)o; pw = option_w(P, i, o); }  /* lighter, heavier */
                }
                ref[i] = pick;
            }
            /* the sums aimed at: dir 1, the room (at most); dir -1, need (at least), within the slack */
            int64_t goal = dir > 0 ? room : need, hi_x = dir > 0 ? room : need + FILL_SLACK;
            size_t span = (size_t)hi_x + 1, words = (span + 63) / 64, work = 0;
            int32_t *from_row, *from_opt;
            uint64_t *now = reach_buffers(span, words, &from_row, &from_opt);
            if (!now) goto done;
            uint64_t *before = now + words;
            now[0] = 1;  /* no move */
            int64_t w_hi = 0;  /* the highest word with a bit set */
            int complete = 1;
            for (size_t c = 0; c < n_cand && !((now[goal / 64] >> (goal % 64)) & 1); c++) {
                Py_ssize_t i = cand[c].row;
                if (gap[i] != 0) continue;
                int32_t base = ref[i];
                int64_t bw = option_w(P, i, base);
                memcpy(before, now, (size_t)(w_hi + 1) * sizeof(uint64_t));
                int64_t new_lo = 0, new_hi = w_hi;
                for (Py_ssize_t o = 0; o <= k; o++) {
                    if (o == base || !((tied[i] >> o) & 1)) continue;
                    int64_t d = dir * (option_w(P, i, o) - bw);
                    if (d <= 0 || d > hi_x) continue;
                    work += shift_reach(before, now, (int64_t)words, span, 0, w_hi, d, (int32_t)i, (int32_t)o,
                                        from_row, from_opt, &new_lo, &new_hi);
                }
                w_hi = new_hi;
                if (work > LOSS_WORK) { complete = 0; break; }
            }
            int64_t reached = -1;  /* dir 1: the largest sum within the room; -1: the smallest past need */
            if (dir > 0) {
                for (int64_t y = goal; y >= 0 && reached < 0; y--)
                    if ((now[y / 64] >> (y % 64)) & 1) reached = y;
            } else {
                for (int64_t y = goal; y <= hi_x && reached < 0; y++)
                    if ((now[y / 64] >> (y % 64)) & 1) reached = y;
            }
            if (reached >= 0) {
                /* the allocation: the references, with the moves along the path to `reached` */
                for (int64_t y = reached; y != 0;) {  /* ref becomes the allocation */
                    Py_ssize_t r = from_row[y];
                    int32_t o = from_opt[y];
                    y -= dir * (option_w(P, r, o) - option_w(P, r, ref[r]));
                    ref[r] = o;
                }
                int64_t lv = floor_v, lw = floor_w;
                for (size_t c = 0; c < n_cand; c++) {
                    Py_ssize_t i = cand[c].row;
                    lv += option_v(P, i, ref[i]) - option_v(P, i, floor_opt[i]);
                    lw += option_w(P, i, ref[i]) - option_w(P, i, floor_opt[i]);
                }
                if (lw > P->capacity) { rc = 2; goto done; }  /* a bug: the moves miscounted */
                if (lv > inc_v || (lv == inc_v && lw < inc_w)) {
                    memcpy(greedy_opt, ref, sizeof(int32_t) * (size_t)n);
                    inc_v = lv; inc_w = lw;
                }
                /* the proof: every option not tied at lambda loses more than the bound's slack (rows
                   outside the candidates lose more than that at every other option: their gap) */
                i128 slack = upper - (i128)P->q * lv;
                int beaten = !complete;
                for (size_t c = 0; c < n_cand && !beaten && slack > 0; c++) {
                    Py_ssize_t i = cand[c].row;
                    for (Py_ssize_t o = 0; o <= k; o++)
                        if (option_ok(P, i, o) && !((tied[i] >> o) & 1)
                            && row_best[i] - reduced(P, option_w(P, i, o), option_v(P, i, o)) <= slack) {
                            beaten = 1;
                            break;
                        }
                }
                proven = !beaten && inc_v == lv && inc_w == lw;
            }
        }
    }

    if (vec_reserve(&states, 1) || vec_reserve(&layer_start, 2)) goto done;
    ((State *)states.a)[0] = (State){0, 0, -1, -1};
    states.len = 1;
    ((size_t *)layer_start.a)[0] = 0;
    ((size_t *)layer_start.a)[1] = 1;
    layer_start.len = 2;
    long inc_layer = -1;  /* the incumbent: -1 the greedy allocation, else a state's layer */
    Moves moves = {.ready = 0};
    Side up = {0}, down = {0};
    int lp_ready = 0;
    int64_t step = 1;  /* the values' gcd once the search is large (value_step) */
    size_t tighten_after = P->at_once ? 0 : MOVES_AFTER;
    if (P->at_once && !proven) {  /* tests: the count cut on the first incumbent too */
        int cut = count_cut_proves(P, inc_v, inc_w, value_step(P));
        if (cut < 0) goto done;
        proven = cut;
    }
    int32_t inc_parent = -1, inc_option = -1;
    size_t layers = 0, generated = 1;
    for (size_t c = 0; !proven; c++) {
        if (c == sorted) {
            if (sorted == n_cand) break;
            sorted = extend_sorted(cand, sorted, &n_cand, gap, upper - (i128)P->q * inc_v);
            if (c == sorted) break;
        }
        Py_ssize_t r = cand[c].row;
        if (upper - gap[r] < (i128)P->q * inc_v) break;  /* sorted by gap: no later row can change */
        size_t from = ((size_t *)layer_start.a)[layers], to = ((size_t *)layer_start.a)[layers + 1];
        size_t count = to - from;
        if (!count) break;
        searched[r] = 1;
        /* the multipliers of Pisinger's bound over the rows still outside the search */
        Increment lo = increment(P->q, P->p), hi = lo;
        int lo_state = extreme(&rank_next, searched, 1, &lo), hi_state = extreme(&rank_prev, searched, 0, &hi);
        if (lo_state < 0) lo = increment(1, 0);  /* no row can take more tokens: adds no value */
        int hi_infinite = hi_state < 0;  /* no row can give tokens back */
        /* the one-move test, once the search is large, again when the extremes moved and the
           search has doubled since (each computation is a pass over the rows) */
        if (generated > tighten_after && (!moves.ready || (generated > 2 * moves.at
                && (compare_efficiency(&lo, &moves.L) != 0 || compare_efficiency(&hi, &moves.H) != 0))))
            moves_compute(&moves, P, floor_opt, searched, &lo, &hi, hi_infinite, generated);
        if (generated > tighten_after && !lp_ready) {
            step = value_step(P);
            /* the hull increments of the rows outside the search, up and down from their floors
               (counted first: the buffers hold what each side has, about two per row) */
            size_t n_up = 0, n_down = 0;
            for (Py_ssize_t i = 0; banded && i < n; i++) {  /* the rows the band left without a hull */
                if (hull_len[i] >= 0) continue;
                size_t at = (size_t)i * (size_t)(k + 1);
                int t = 0;
                int64_t hw[64], hv[64];
                hull_len[i] = build_hull(P, i, hull + at, hw, hv, &uncounted, &usual);
                while (t < hull_len[i] && hull[at + (size_t)t] != floor_opt[i]) t++;
                if (t == hull_len[i]) { rc = 2; goto done; }  /* a bug: the floor is a vertex */
                floor_pos[i] = t;
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                if (searched[i] || hull_len[i] < 2) continue;
                n_up += (size_t)(hull_len[i] - 1 - floor_pos[i]);
                n_down += (size_t)floor_pos[i];
            }
            RowInc *incs = scratch(W_LP_INC, 2 * (n_up + n_down) + 2, sizeof(RowInc));
            int64_t *sums = scratch(W_LP_SUMS, 2 * (n_up + n_down) + 4, sizeof(int64_t));
            if (!incs || !sums) goto done;
            up.all = incs;
            down.all = incs + n_up;
            up.take = incs + n_up + n_down + 1;
            down.take = up.take + n_up;
            up.sum_ds = sums;
            up.sum_dv = sums + (n_up + 1);
            down.sum_ds = sums + 2 * (n_up + 1);
            down.sum_dv = down.sum_ds + (n_down + 1);
            up.len = down.len = 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                if (searched[i]) continue;
                size_t at = (size_t)i * (size_t)(k + 1);
                for (int t = 1; t < hull_len[i]; t++) {
                    int32_t o = hull[at + (size_t)t], o0 = hull[at + (size_t)t - 1];
                    RowInc x = {option_w(P, i, o) - option_w(P, i, o0), option_v(P, i, o) - option_v(P, i, o0), i};
                    if (t > floor_pos[i]) up.all[up.len++] = x;
                    else down.all[down.len++] = x;
                }
            }
            qsort(up.all, up.len, sizeof(RowInc), compare_up);
            qsort(down.all, down.len, sizeof(RowInc), compare_down);
            up.first = down.first = 0;
            lp_ready = 1;
        }
        if (lp_ready) {
            side_layer(&up, searched);
            side_layer(&down, searched);
        }
        int f = floor_opt[r];
        int64_t fw = option_w(P, r, f), fv = option_v(P, r, f);
        Merge merge = {.size = sizeof(State), .from = from, .to = to};
        /* the row joins reduced by the current bound: an option whose Lagrangian bound (every
           other row at its best at lambda) is below the incumbent's value is in no better
           allocation, nor in one that ties it with fewer tokens */
        i128 row_best = reduced(P, fw, fv), reach = (i128)P->q * inc_v - upper + row_best;
        for (Py_ssize_t o = 0; o <= k; o++)
            if (option_ok(P, r, o) && (o == f || reduced(P, option_w(P, r, o), option_v(P, r, o)) >= reach))
                merge_add(&merge, option_w(P, r, o) - fw, option_v(P, r, o) - fv, (int32_t)o);
        generated += count * (size_t)merge.s;
        if (generated > (P->state_limit && P->state_limit < PHASE1_LIMIT ? P->state_limit : PHASE1_LIMIT)) {
            int cut = count_cut_proves(P, inc_v, inc_w, step < 1 ? 1 : step);
            if (cut < 0) goto done;
            if (!cut) { rc = 1; goto done; }
            break;  /* the incumbent is the optimum (the count cut) */
        }
        if (vec_reserve(&states, count * (size_t)merge.s)) goto done;
        State *st = states.a;
        merge.layer = (const char *)st;
        Merged *points = scratch(W_MERGED, merge_chunk, sizeof(Merged));
        if (!points) goto done;
        for (size_t n_points; (n_points = merge_all(&merge, points, merge_chunk)) > 0;) {  /* a chunk at a time */
            for (size_t e = 0; e < n_points; e++) {
                int64_t bw = points[e].w, bv = points[e].v;
                size_t parent = points[e].at;
                int32_t option = merge.shift[points[e].pick].option;
                int64_t tw = floor_w + bw, tv = floor_v + bv;
                if (tw <= P->capacity && (tv > inc_v || (tv == inc_v && tw < inc_w))) {
                    inc_v = tv; inc_w = tw;
                    inc_layer = (long)layers + 1;
                    inc_parent = (int32_t)(parent - from);
                    inc_option = option;
                }
                if (!may_improve(tv, floor_w + bw, P->capacity, &lo, &hi, hi_infinite, inc_v, inc_w, step)) continue;
                if (moves.ready && !moves_may_improve(&moves, tv, floor_w + bw, P->capacity, inc_v, inc_w, step)) continue;
                if (lp_ready && !lp_reach(&up, &down, searched, tv, floor_w + bw, P->capacity, (i128)inc_v + step)
                    && !lp_reach(&up, &down, searched, tv, floor_w + bw, inc_w - 1, inc_v)) continue;
                st[states.len++] = (State){bw, bv, (int32_t)(parent - from), option};
            }
        }
        if (vec_reserve(&layer_start, 1)) goto done;
        ((size_t *)layer_start.a)[layer_start.len++] = states.len;
        layers++;
    }
    /* the optimum x*: the floor, with the incumbent's changes */
    rebuild_incumbent(choice, floor_opt, n, states.a, layer_start.a, cand, greedy_opt, inc_layer, inc_parent, inc_option);
    int64_t best_v = inc_v, best_w = inc_w;

    /* 4. phase 2: levels that can be in an allocation worth (V*, W*), then the tie rule */
    size_t n_free = 0;
    i128 fixed_loss = 0;  /* sum of (best - reduced) over rows fixed away from their floor */
    int64_t rest_w = best_w, rest_v = best_v;
    /* bounded_ties < 0: the optimum only, no reduction and no tie rule (what mcknap computes:
       benchmarks/run.py times it for comparison; never an engine's answer) */
    /* can_match(bound, V*, W*) is bound >= match: a Lagrangian bound at least this allows an
       allocation worth (V*, W*). An option o of row r stays iff its bound, upper - best_r +
       reduced(o), reaches it; where match = upper (the optimum is worth the bound) those are the
       options tied at lambda. keep_mask[r]: the kept options of free row r. */
    i128 match = (i128)P->q * best_v + (i128)P->p * (P->capacity - best_w);
    uint64_t *keep_mask = scratch(W_KEEP_MASK, (size_t)n, sizeof(uint64_t));
    if (!keep_mask) goto done;
    /* the rows with another option whose gap leaves it a chance are candidates (the candidate list
       dropped only rows with larger gaps, against smaller incumbents): where they are many, they
       are visited in input order (memory order, and free rows come out sorted) */
    int in_order = n_cand > (size_t)n / 16;
    size_t visit = bounded_ties < 0 ? 0 : in_order ? (size_t)n : n_cand;
    i128 most_gap = upper - (i128)P->q * best_v;
    /* keep, row by row: where every row is visited in order and a row's k + 1 flags fit a word,
       each row's flags are one 8-byte store (its bits spread to bytes) whose bytes past the row
       the next rows' stores overwrite; else zeroed, the optimum's levels set, then the kept ones */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    int rowwise = in_order && visit == (size_t)n && k + 1 <= 8;
#else
    int rowwise = 0;
#endif
    if (!rowwise) {
        memset(keep, 0, (size_t)n * (size_t)(k + 1));
        for (Py_ssize_t i = 0; i < n; i++) keep[i * (k + 1) + choice[i]] = 1;
    }
    size_t keep_bytes = (size_t)n * (size_t)(k + 1);
    int at_bound = match == upper;  /* an option needs the reduced value least = match - upper + best */
    /* Where the optimum is worth the bound (Pisinger's correlated classes) and every record is
       visited in order, the tie rule's lead (below) is taken in this pass, while each free row's
       levels are at hand: every kept option is then tied at lambda and no fixed row loses
       anything, so the bound with any prefix at the lead is the bound itself and each free row's
       lead is its first kept option. Both are checked (lead_ok); else the lead pass runs. */
    int fused = in_order && at_bound && visit == (size_t)n;
    int lead_ok = fused;
    int32_t *lead_top = NULL;
    int64_t *lead_sums = NULL, lead_w = 0, lead_v = 0;
    if (fused) {
        lead_top = scratch(W_TOP, (size_t)n, sizeof(int32_t));
        lead_sums = scratch(W_LEAD_SUMS, 2 * ((size_t)n + 1), sizeof(int64_t));
        if (!lead_top || !lead_sums) goto done;
        lead_sums[0] = lead_sums[n + 1] = 0;
    }
    /* (where most rows are candidates, their levels come in input order: the hardware's prefetch) */
    int sparse = in_order && n_cand < (size_t)n / 2 && far_rows(P);
    for (size_t c = 0; c < visit; c++) {
        Py_ssize_t r = in_order ? (Py_ssize_t)c : cand[c].row;
        if (sparse && c + PREFETCH_ROWS < visit) {  /* the free rows' levels are read, scattered over the input */
            size_t ahead = c + PREFETCH_ROWS;
            if (has_alt[ahead] && gap[ahead] <= most_gap) prefetch_row(P, (Py_ssize_t)ahead);
        }
        uint64_t km = (uint64_t)1 << choice[r];
        if (!has_alt[r] || gap[r] > most_gap) goto visited;  /* only its floor level can be optimal */
        i128 best = row_best[r];
        if (at_bound) km |= tied[r];
        else {
            i128 least = match - upper + best;
            for (Py_ssize_t o = 0; o <= k; o++)
                if (option_ok(P, r, o) && reduced(P, option_w(P, r, o), option_v(P, r, o)) >= least)
                    km |= (uint64_t)1 << o;
        }
        if (km & (km - 1)) {
            if (!rowwise)
                for (uint64_t m = km; m; m &= m - 1) keep[r * (k + 1) + __builtin_ctzll(m)] = 1;
            keep_mask[r] = km;
            if (fused) {
                int o = __builtin_ctzll(km);
                lead_ok &= !(km & ~tied[r]);
                lead_top[n_free] = (int32_t)o;
                lead_w += option_w(P, r, o);
                lead_v += option_v(P, r, o);
                lead_sums[n_free + 1] = lead_w;
                lead_sums[(size_t)n + 1 + n_free + 1] = lead_v;
            }
            core[n_free++] = r;
            rest_w -= option_w(P, r, (Py_ssize_t)choice[r]);
            rest_v -= option_v(P, r, (Py_ssize_t)choice[r]);
        } else if (!((tied[r] >> choice[r]) & 1)) {
            fixed_loss += best - reduced(P, option_w(P, r, choice[r]), option_v(P, r, choice[r]));
        }
    visited:
        if (rowwise) {
            /* bit o to byte o (bits 0..6 by one product, no carries; bit 7 apart) */
            uint64_t bytes = ((km & 0x7F) * 0x0002040810204081ULL & 0x0101010101010101ULL) | (km >> 7 & 1) << 56;
            size_t off = (size_t)r * (size_t)(k + 1);
            if (off + 8 <= keep_bytes) memcpy(keep + off, &bytes, 8);
            else
                for (Py_ssize_t o = 0; o <= k; o++) keep[off + (size_t)o] = (uint8_t)(km >> o & 1);
        }
    }
    int tie_rule = bounded_ties >= 0;
    size_t generated2 = 0, tail_rows = 0;
    if (n_free) {
        /* free rows in input order: so visited, else by one pass over the marks, or sorted */
        if (!in_order && n_free > (size_t)n / 64) {
            memset(searched, 0, (size_t)n);  /* phase 1 is over: its marks are free to reuse */
            for (size_t c = 0; c < n_free; c++) searched[core[c]] = 1;
            size_t at = 0;
            for (Py_ssize_t i = 0; i < n; i++)
                if (searched[i]) core[at++] = i;
        } else if (!in_order) {
            qsort(core, n_free, sizeof(int64_t), compare_rows);
        }
        const int64_t *free_rows = core;
        size_t F = n_free;
        /* rest_w, rest_v: tokens and value of the fixed rows; layer j holds the suffix
           free_rows[j..] (layer F is the empty suffix) */
        int64_t room = best_w - rest_w, room_v = best_v - rest_v;
        /* each layer holds at most room + 1 states (one per token count): when that bounds the
           whole DP below PHASE2_BOUNDED, it runs to the end whatever pruning achieves (unless the
           caller has a cheaper way to order the ties: bounded_ties = 0) */
        double most = (double)F * (double)(room + 1) * (double)(k + 1);
        size_t limit2 = bounded_ties && most <= PHASE2_BOUNDED ? (size_t)PHASE2_BOUNDED
                        : bounded_ties == 1 ? (size_t)PHASE2_WIDE : (size_t)PHASE2_LIMIT;
        /* The lead: free rows in input order, each at its highest-fidelity kept option that the
           Lagrangian bound still allows with the rows before it at their lead options and the
           rows after it at their best (every higher option is then proven in no allocation worth
           (V*, W*) with this prefix). lead_bound[j]: that bound with rows 0..j-1 at the lead.
           Prefix sums of the lead's tokens and value; suffix sums of the least and most tokens
           and value over kept options (the window a suffix can reach). */
        int64_t *tail = scratch(W_TAIL, 6 * (F + 1), sizeof(int64_t));
        int32_t *top = fused ? lead_top : scratch(W_TOP, F, sizeof(int32_t));
        i128 *lead_bound = scratch(W_LEAD, F + 1, sizeof(i128));
        i128 *tied_best = scratch(W_TIED, F + 1, sizeof(i128));
        if (!tail || !top || !lead_bound || !tied_best) goto done;
        lead_ok &= fixed_loss == 0;
        int64_t *top_w = lead_ok ? lead_sums : tail, *top_v = lead_ok ? lead_sums + (size_t)n + 1 : tail + (F + 1);
        int64_t *min_w = tail + 2 * (F + 1), *max_w = tail + 3 * (F + 1),
                *min_v = tail + 4 * (F + 1), *max_v = tail + 5 * (F + 1);
        top_w[0] = top_v[0] = 0;
        lead_bound[0] = upper - fixed_loss;  /* every free row at its best */
        size_t lead = F;  /* rows the lead reaches: past it the bound allows no option */
        int all_tied = bounded_ties != 2;  /* 2: the Pareto layers only (tests compare the two) */
        /* one pass, first to last: the lead (the suffix sums of the windows are taken below, from
           the last row back, only as far as the tail reaches); taken already where lead_ok, every
           lead_bound[j] then being lead_bound[0] */
        for (size_t j = 0; j < F && !lead_ok; j++) {
            Py_ssize_t r = free_rows[j];
            uint64_t km = keep_mask[r];
            int tied_row = !(km & ~tied[r]);
            all_tied &= tied_row;
            if (lead < F) continue;
            Py_ssize_t o = k + 1;
            i128 loss = 0;  /* best - reduced(o) */
            if (tied_row) {  /* every kept option tied: the bound is lead_bound[j] for each */
                if (lead_bound[j] >= match) o = __builtin_ctzll(km);
            } else {
                i128 best = row_best[r];
                for (uint64_t m = km; m; m &= m - 1) {
                    int a = __builtin_ctzll(m);
                    i128 d = best - reduced(P, option_w(P, r, a), option_v(P, r, a));
                    if (lead_bound[j] - d >= match) { o = a; loss = d; break; }
                }
            }
            if (o > k) { lead = j; continue; }
            top[j] = (int32_t)o;
            top_w[j + 1] = top_w[j] + option_w(P, r, o);
            top_v[j + 1] = top_v[j] + option_v(P, r, o);
            lead_bound[j + 1] = lead_bound[j] - loss;
        }
        /* suffix sums over the free rows j..: the least and most tokens and value of their kept
           options (the window a suffix can reach), and tied_best[j], the sum of their bests; they
           hold for j >= have, and suffix_to extends them down to s (the tail reads them at its
           start s and past it only, and its start only moves down) */
        size_t have = F;
        min_w[F] = max_w[F] = min_v[F] = max_v[F] = 0;
        tied_best[F] = 0;
        /* The tie rule with an expanding tail. With the first s free rows at the lead, the last
           F - s rows must reach exactly T_s = (room, room_v) - lead(0..s). If they can (the
           tail's DP holds T_s), each of the first s rows is at its tie-rule level (every higher
           option is excluded by the bound, and the tail is a witness that the lead completes),
           and the tail's levels follow from its layers, first to last. The tail starts at the
           fewest rows whose window can hold T_s and grows by half until its DP holds T_s; at
           s = 0 it is the whole tie-rule DP, which holds the optimum. A state of a tail layer
           is kept only if the rows between s and the layer can still complete it to T_s (the
           window) and the bound with the lead before s allows it. */
        /* Where every kept option of every free row is exactly as good at lambda as its row's best
           (the optimum is worth the bound: Pisinger's correlated classes), a set of rows' value
           follows from its tokens, q*v - p*w being the sum of their bests: the tail DP is then a
           bitset of the token sums each layer reaches (within the same windows), which gives the
           same levels as the Pareto layers at a bit per state. tied_best[j]: that sum over the
           free rows j.. */
        size_t L = F;
        for (size_t s = lead + 1; s-- > 0;) {
            have = suffix_to(P, free_rows, keep_mask, row_best, have, s, min_w, max_w, min_v, max_v, tied_best);
            int64_t tw = room - top_w[s], tv = room_v - top_v[s];
            if (tw >= min_w[s] && tw <= max_w[s] && tv >= min_v[s] && tv <= max_v[s]) { L = F - s; break; }
        }
        if (L == 0) L = 1;
        int found = 0, far_tail = far_rows(P);
        size_t *ps = NULL;
        for (;; L = L + L / 2 + 1 < F ? L + L / 2 + 1 : F) {
            size_t s = F - L;
            have = suffix_to(P, free_rows, keep_mask, row_best, have, s, min_w, max_w, min_v, max_v, tied_best);
            int64_t tw = room - top_w[s], tv = room_v - top_v[s];
            int last = s == 0;
            if (!(tw >= min_w[s] && tw <= max_w[s] && tv >= min_v[s] && tv <= max_v[s])) {
                if (last) { rc = 2; goto done; }  /* a bug: the optimum lies outside its own window */
                continue;
            }
            if (all_tied) {
                /* layer j's token sums lie in [lo_j, hi_j]: what rows j.. can reach, what rows s..j-1
                   can complete to T_s, and the room */
                int64_t *lo_of = scratch(W_BIT_LO, F + 1, sizeof(int64_t));
                size_t *word_at = scratch(W_BIT_AT, F + 2, sizeof(size_t));
                if (!lo_of || !word_at) goto done;
                size_t words = 0;
                int empty = 0;
                for (size_t j = s; j <= F; j++) {
                    int64_t lo = tw - (max_w[s] - max_w[j]), hi = tw - (min_w[s] - min_w[j]);
                    if (lo < min_w[j]) lo = min_w[j];
                    if (hi > max_w[j]) hi = max_w[j];
                    if (hi > room) hi = room;
                    if (lo > hi) { empty = 1; hi = lo; }
                    lo_of[j] = lo;
                    word_at[j] = words;
                    words += (size_t)((hi - lo) / 64 + 1);
                }
                word_at[F + 1] = words;
                if (words <= BITSET_WORDS) {
                    uint64_t *bits = scratch(W_BITS, words, sizeof(uint64_t));
                    if (!bits) goto done;
                    memset(bits + word_at[s], 0, (words - word_at[s]) * sizeof(uint64_t));
                    /* can_match with every tail row at a tied option: the same test for every state */
                    int allowed = !empty && can_match(P, lead_bound[lead_ok ? 0 : s], best_v, best_w);
                    bits[word_at[F]] = allowed;  /* layer F: the empty sum, 0 tokens (lo_of[F] = 0) */
                    for (size_t j = F; j-- > s && allowed;) {
                        Py_ssize_t r = free_rows[j];
                        if (far_tail && j >= s + PREFETCH_ROWS) prefetch_row(P, free_rows[j - PREFETCH_ROWS]);
                        int64_t n_words = (int64_t)(word_at[j + 1] - word_at[j]);
                        int64_t src_words = (int64_t)(word_at[j + 2] - word_at[j + 1]);
                        uint64_t *dst = bits + word_at[j];
                        const uint64_t *src = bits + word_at[j + 1];
                        for (Py_ssize_t o = 0; o <= k; o++) {
                            if (!keep[r * (k + 1) + o]) continue;
                            int64_t off = lo_of[j] - option_w(P, r, o) - lo_of[j + 1];
                            or_shifted(dst, n_words, src, src_words, off);
                        }
                        /* the bits past hi_j (in the last word) are sums no completion takes: cleared */
                        int64_t hi = tw - (min_w[s] - min_w[j]);
                        if (hi > max_w[j]) hi = max_w[j];
                        if (hi > room) hi = room;
                        int64_t used_bits = hi - lo_of[j] + 1, tail_bits = used_bits % 64;
                        if (tail_bits) dst[n_words - 1] &= ((uint64_t)1 << tail_bits) - 1;
                        generated2 += (size_t)count_bits(dst, n_words);
                    }
                    /* layer s holds T_s: its tokens, and its value is the one those tokens give */
                    int64_t at = tw - lo_of[s];
                    found = allowed && at >= 0 && (bits_at(bits + word_at[s], (int64_t)(word_at[s + 1] - word_at[s]), at) & 1)
                            && (i128)P->q * tv - (i128)P->p * tw == tied_best[s];
                    if (found) {
                        for (size_t j = 0; j < s; j++) choice[free_rows[j]] = top[j];
                        for (size_t j = s; j < F; j++) {
                            Py_ssize_t r = free_rows[j];
                            if (far_tail && j + PREFETCH_ROWS < F) prefetch_row(P, free_rows[j + PREFETCH_ROWS]);
                            int done_row = 0;
                            for (Py_ssize_t o = 0; o <= k && !done_row; o++) {
                                if (!keep[r * (k + 1) + o]) continue;
                                int64_t rest = tw - option_w(P, r, o) - lo_of[j + 1];
                                int64_t n_src = (int64_t)(word_at[j + 2] - word_at[j + 1]);
                                if (rest < 0 || !(bits_at(bits + word_at[j + 1], n_src, rest) & 1)) continue;
                                choice[r] = o;
                                tw -= option_w(P, r, o);
                                done_row = 1;
                            }
                            if (!done_row) { rc = 2; goto done; }  /* a bug: the bits lost the optimum's suffix */
                        }
                        tail_rows = L;
                        break;
                    }
                    if (last) { rc = 2; goto done; }  /* a bug: the whole DP lost the optimum */
                    continue;
                }
            }
            if (vec_reserve(&pairs, 1) || vec_reserve(&pair_start, F + 2)) goto done;
            ps = pair_start.a;
            ((Pair *)pairs.a)[0] = (Pair){0, 0};
            pairs.len = 1;
            ps[F] = 0;
            i128 base = lead_bound[lead_ok ? 0 : s];  /* the lead before s, every tail row at its best */
            for (size_t j = F; j-- > s;) {
                Py_ssize_t r = free_rows[j];
                base -= row_best[r];  /* this row's contribution now comes from the state */
                size_t from = ps[j + 1], to = pairs.len;
                size_t count = to - from;
                Merge merge = {.size = sizeof(Pair), .from = from, .to = to};
                for (Py_ssize_t o = 0; o <= k; o++)
                    if (keep[r * (k + 1) + o]) merge_add(&merge, option_w(P, r, o), option_v(P, r, o), (int32_t)o);
                generated2 += count * (size_t)merge.s;
                if (generated2 > limit2) goto tail_done;
                if (vec_reserve(&pairs, count * (size_t)merge.s)) goto done;
                ps = pair_start.a;
                Pair *pr = pairs.a;
                ps[j] = pairs.len;
                merge.layer = (const char *)pr;
                /* the rows s..j-1 between the tail's start and this layer complete it to T_s */
                int64_t lo_w = tw - (max_w[s] - max_w[j]), hi_w = tw - (min_w[s] - min_w[j]);
                int64_t lo_v = tv - (max_v[s] - max_v[j]), hi_v = tv - (min_v[s] - min_v[j]);
                Merged *points = scratch(W_MERGED, merge_chunk, sizeof(Merged));
                if (!points) goto done;
                for (size_t n_points; (n_points = merge_all(&merge, points, merge_chunk)) > 0;) {  /* a chunk at a time */
                    for (size_t e = 0; e < n_points; e++) {
                        int64_t bw = points[e].w, bv = points[e].v;
                        if (bw > room || bw < lo_w || bw > hi_w || bv < lo_v || bv > hi_v) continue;
                        i128 bound = base + (i128)P->q * bv - (i128)P->p * bw;
                        if (!can_match(P, bound, best_v, best_w)) continue;
                        pr[pairs.len++] = (Pair){bw, bv};
                    }
                }
            }
            /* layer s is [ps[s], pairs.len): does it hold T_s? */
            {
                const Pair *pr = pairs.a;
                size_t a = ps[s], b = pairs.len;
                while (a < b) {
                    size_t mid = a + (b - a) / 2;
                    if (pr[mid].w < tw) a = mid + 1;
                    else b = mid;
                }
                found = a < pairs.len && pr[a].w == tw && pr[a].v == tv;
            }
            if (found) {
                for (size_t j = 0; j < s; j++) choice[free_rows[j]] = top[j];
                const Pair *pr = pairs.a;
                for (size_t j = s; j < F; j++) {
                    Py_ssize_t r = free_rows[j];
                    size_t lo = ps[j + 1], end = ps[j];
                    int done_row = 0;
                    for (Py_ssize_t o = 0; o <= k && !done_row; o++) {
                        if (!keep[r * (k + 1) + o]) continue;
                        int64_t w = tw - option_w(P, r, o), v = tv - option_v(P, r, o);
                        size_t a = lo, b = end;  /* binary search for w in [lo, end) */
                        while (a < b) {
                            size_t mid = a + (b - a) / 2;
                            if (pr[mid].w < w) a = mid + 1;
                            else b = mid;
                        }
                        if (a < end && pr[a].w == w && pr[a].v == v) {
                            choice[r] = o;
                            tw = w; tv = v;
                            done_row = 1;
                        }
                    }
                    if (!done_row) { rc = 2; goto done; }  /* a bug: the states lost the optimum's suffix */
                }
                tail_rows = L;
                break;
            }
            if (last) { rc = 2; goto done; }  /* a bug: the whole DP lost the optimum */
        }
    tail_done:
        if (!found) tie_rule = 0;
    }
    if (!tie_rule) {
        /* the tie-rule DP gave up: report phase 1's optimum */
        rebuild_incumbent(choice, floor_opt, n, states.a, layer_start.a, cand, greedy_opt, inc_layer, inc_parent, inc_option);
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (choice[i] == k) choice[i] = -1;

    info->v[0] = P->p;
    info->v[1] = P->q;
    info->upper = (double)upper / (double)P->q;
    info->v[3] = best_v;
    info->v[4] = best_w;
    info->v[5] = on_hull;
    info->v[6] = banded ? -1 : usable_levels - on_hull;
    info->v[7] = (int64_t)layers;
    info->v[8] = (int64_t)n_free;
    info->v[9] = tie_rule;
    info->v[10] = (int64_t)generated;
    info->v[11] = (int64_t)generated2;
    info->v[12] = (int64_t)tail_rows;
    info->v[13] = n;  /* rows given a hull: all of them without a band */
    if (banded) {
        info->v[13] = 0;
        for (Py_ssize_t i = 0; i < n; i++) info->v[13] += hull_len[i] >= 0;
    }
    rc = 0;
done:
    ws_states = states; ws_layer_start = layer_start; ws_pairs = pairs; ws_pair_start = pair_start;
    return rc;  /* the caller trims the workspace once it no longer reads its own slots */
}

/* One array argument: its object, item size, whether the kernel writes it, its name, and the
   byte length its shape calls for. */
typedef struct { PyObject *obj; Py_ssize_t itemsize; int writable; const char *name; Py_ssize_t bytes; } Argument;

/* Takes the buffers of all arguments (C-contiguous, the right item size and length), or none:
   on any failure it releases what it took, sets the Python error and returns -1. */
static int take_buffers(const Argument *arg, Py_buffer *view, int count) {
    for (int a = 0; a < count; a++) {
        int flags = PyBUF_C_CONTIGUOUS | (arg[a].writable ? PyBUF_WRITABLE : 0);
        int ok = PyObject_GetBuffer(arg[a].obj, &view[a], flags) == 0;
        if (ok && view[a].itemsize != arg[a].itemsize) {
            PyErr_Format(PyExc_TypeError, "%s: expected items of %zd bytes", arg[a].name, arg[a].itemsize);
            PyBuffer_Release(&view[a]);
            ok = 0;
        } else if (ok && view[a].len != arg[a].bytes) {
            PyErr_Format(PyExc_ValueError, "%s: array sizes do not match (%zd bytes, expected %zd)", arg[a].name,
                         view[a].len, arg[a].bytes);
            PyBuffer_Release(&view[a]);
            ok = 0;
        }
        if (!ok) {
            while (a-- > 0) PyBuffer_Release(&view[a]);
            return -1;
        }
    }
    return 0;
}

static void release_buffers(Py_buffer *view, int count) {
    for (int a = 0; a < count; a++) PyBuffer_Release(&view[a]);
}

static PyObject *info_tuple(const Info *info) {
    const int64_t *v = info->v;
    return Py_BuildValue("(LLdLLLLLLiLLLL)", (long long)v[0], (long long)v[1], info->upper, (long long)v[3],
                         (long long)v[4], (long long)v[5], (long long)v[6], (long long)v[7], (long long)v[8],
                         (int)v[9], (long long)v[10], (long long)v[11], (long long)v[12], (long long)v[13]);
}

/* Problem.width of raw arrays: the OR of the usable levels' tokens and values, as the scaling gives it,
   or UINT64_MAX where a usable level is worth nothing or less (the scaling's never are: width_trusted).
   Scaled arrays then take the same paths through either entry (tests compare the two). */
static uint64_t raw_width(const Problem *P) {
    size_t cells = (size_t)P->n * (size_t)P->k;
    uint64_t wide = 0;
    int worthless = 0;
    for (size_t j = 0; j < cells; j++) {
        int on = P->usable[j] != 0;
        wide |= on ? (uint64_t)P->tokens[j] | (uint64_t)P->values[j] : 0;
        worthless |= on & (P->values[j] <= 0);
    }
    return worthless ? UINT64_MAX : wide;
}

static PyObject *kernel_solve(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_tokens, *o_values, *o_usable, *o_choice, *o_keep, *o_core;
    long long capacity;
    int bounded_ties;
    Py_ssize_t n, k;
    int at_once = 0, banded = -1, shortcut = 0;
    Py_ssize_t state_limit = 0;
    if (!PyArg_ParseTuple(args, "nnOOOLOOOi|pipn", &n, &k, &o_tokens, &o_values, &o_usable, &capacity, &o_choice,
                          &o_keep, &o_core, &bounded_ties, &at_once, &banded, &shortcut, &state_limit))
        return NULL;
    if (banded < 0) banded = band_mode(n);
    if (k < 0 || k > 62 || n < 0) {
        PyErr_SetString(PyExc_ValueError, "the kernel takes 0..62 levels per row");
        return NULL;
    }
    const Argument arg[] = {
        {o_tokens, 8, 0, "tokens", n * k * 8}, {o_values, 8, 0, "values", n * k * 8}, {o_usable, 1, 0, "usable", n * k},
        {o_choice, 8, 1, "choice", n * 8}, {o_keep, 1, 1, "keep", n * (k + 1)}, {o_core, 8, 1, "core", n * 8},
    };
    Py_buffer b[6];
    if (take_buffers(arg, b, 6) < 0) return NULL;
    PyObject *out = NULL;
    Problem P = {n, k, b[0].buf, b[1].buf, b[2].buf, (int64_t)capacity, 0, 1, at_once, banded, UINT64_MAX, shortcut,
                 state_limit > 0 ? (size_t)state_limit : 0};
    P.width = raw_width(&P);
    Info info = {{0}, 0.0};
    int rc;
    rc = solve(&P, b[3].buf, b[4].buf, b[5].buf, bounded_ties, &info);  /* holds the GIL: one shared workspace */
    trim_workspace();
    if (rc < 0) { PyErr_NoMemory(); goto release; }
    if (rc == 2) { PyErr_SetString(PyExc_RuntimeError, "kernel: the tie-rule states lost the optimum"); goto release; }
    if (rc == 1) { out = Py_None; Py_INCREF(out); goto release; }
    out = info_tuple(&info);
release:
    release_buffers(b, 6);
    return out;
}

/* Scaling, as instance.scale does it in numpy (the same IEEE operations, no fused multiply-add,
   so the integers are identical): pass 1 gives each row's best positive net value (the caller
   sums them with numpy to choose the factor), pass 2 the scaled integer values and usable mask. */
static PyObject *kernel_scale(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_tokens, *o_utility, *o_mask, *o_out, *o_usable;
    Py_ssize_t n, k;
    double price, factor;
    long long budget;
    if (!PyArg_ParseTuple(args, "nnOOOdLdOO", &n, &k, &o_tokens, &o_utility, &o_mask, &price, &budget, &factor,
                          &o_out, &o_usable))
        return NULL;
    int passes_best = factor <= 0.0;  /* factor 0: pass 1 (o_out is a float (n,) array) */
    const Argument arg[] = {
        {o_tokens, 8, 0, "tokens", n * k * 8}, {o_utility, 8, 0, "utility", n * k * 8}, {o_mask, 1, 0, "mask", n * k},
        {o_out, 8, 1, "out", (passes_best ? n : n * k) * 8}, {o_usable, 1, 1, "usable", passes_best ? 0 : n * k},
    };
    Py_buffer b[5];
    if (take_buffers(arg, b, 5) < 0) return NULL;
    const int64_t *t = b[0].buf;
    const double *u = b[1].buf;
    const uint8_t *m = b[2].buf;
    Py_BEGIN_ALLOW_THREADS
    if (passes_best) {
        double *best = b[3].buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            double b = 0.0;
            for (Py_ssize_t j = i * k; j < (i + 1) * k; j++) {
                if (!m[j] || t[j] > budget) continue;
                double net = u[j] - price * (double)t[j];
                if (net > b) b = net;
            }
            best[i] = b;
        }
    } else {
        int64_t *values = b[3].buf;
        uint8_t *usable = b[4].buf;
        for (Py_ssize_t j = 0; j < n * k; j++) {
            int offered = m[j] && t[j] <= budget;
            double net = offered ? u[j] - price * (double)t[j] : 0.0;
            values[j] = round_to_int64(net * factor);
            usable[j] = (uint8_t)(offered && values[j] > 0);
        }
    }
    Py_END_ALLOW_THREADS
    release_buffers(b, 5);
    Py_RETURN_NONE;
}

/* The (m+1)-th largest of a[0..len) (quickselect; a is reordered). */
static double largest_after(double *a, size_t len, size_t m) {
    size_t lo = 0, hi = len, want = m;  /* position want in descending order */
    uint64_t seed = 0x853C49E6748FEA9BULL;
    for (;;) {
        double pivot = a[lo + next_random(&seed) % (hi - lo)];
        size_t i = lo, gt = lo, lt = hi;
        while (i < lt) {
            if (a[i] > pivot) { double t = a[gt]; a[gt] = a[i]; a[i] = t; gt++; i++; }
            else if (a[i] < pivot) { lt--; double t = a[lt]; a[lt] = a[i]; a[i] = t; }
            else i++;
        }
        if (want < gt) hi = gt;
        else if (want < lt) return pivot;
        else lo = lt;
    }
}

/* The count-limited dual U(lambda, mu(lambda)) of reduce.py's _dual, in one pass: columns are
   levels (the last is delete), float values -inf where a level is not usable. */
static PyObject *kernel_dual(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_values, *o_sizes, *o_scratch;
    Py_ssize_t levels, n, limit;
    double budget, lam;
    if (!PyArg_ParseTuple(args, "nnOOddnO", &levels, &n, &o_values, &o_sizes, &budget, &lam, &limit, &o_scratch))
        return NULL;
    if (levels < 1 || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "dual: at least one level (delete) and a limit >= 0");
        return NULL;
    }
    const Argument arg[] = {
        {o_values, 8, 0, "values", levels * n * 8}, {o_sizes, 8, 0, "sizes", levels * n * 8},
        {o_scratch, 8, 1, "scratch", n * 8},
    };
    Py_buffer b[3];
    if (take_buffers(arg, b, 3) < 0) return NULL;
    const double *v = b[0].buf, *w = b[1].buf;
    double *gain = b[2].buf;
    size_t positive = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double best = -HUGE_VAL;
        for (Py_ssize_t j = 0; j + 1 < levels; j++) {
            double r = v[j * n + i] - lam * w[j * n + i];
            if (r > best) best = r;
        }
        if (best > 0) gain[positive++] = best;
    }
    double mu = positive > (size_t)limit ? largest_after(gain, positive, (size_t)limit) : 0.0;
    double total = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double best = v[(levels - 1) * n + i] - lam * w[(levels - 1) * n + i];  /* delete */
        for (Py_ssize_t j = 0; j + 1 < levels; j++) {
            double r = v[j * n + i] - lam * w[j * n + i] - mu;
            if (r > best) best = r;
        }
        total += best;
    }
    release_buffers(b, 3);
    return Py_BuildValue("(dd)", lam * budget + mu * (double)limit + total, mu);
}

/* The greedy baseline's walk (greedy.py): rows in the given order, each at its first usable
   level (highest fidelity first) that still fits, until the count limit (-1: none). */
static PyObject *kernel_greedy(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_order, *o_tokens, *o_usable, *o_choice;
    Py_ssize_t n, k;
    long long budget, limit;
    if (!PyArg_ParseTuple(args, "nnOOOLLO", &n, &k, &o_order, &o_tokens, &o_usable, &budget, &limit, &o_choice))
        return NULL;
    const Argument arg[] = {
        {o_order, 8, 0, "order", n * 8}, {o_tokens, 8, 0, "tokens", n * k * 8}, {o_usable, 1, 0, "usable", n * k},
        {o_choice, 8, 1, "choice", n * 8},
    };
    Py_buffer b[4];
    if (take_buffers(arg, b, 4) < 0) return NULL;
    PyObject *result = NULL;
    const int64_t *order = b[0].buf, *tokens = b[1].buf;
    const uint8_t *usable = b[2].buf;
    int64_t *choice = b[3].buf, left = budget, taken = 0;
    for (Py_ssize_t i = 0; i < n; i++) choice[i] = -1;
    for (Py_ssize_t a = 0; a < n; a++) {
        if (limit >= 0 && taken >= limit) break;
        int64_t row = order[a];
        if (row < 0 || row >= n) { PyErr_SetString(PyExc_ValueError, "order holds a row out of range"); goto release; }
        for (Py_ssize_t j = 0; j < k; j++) {
            if (usable[row * k + j] && tokens[row * k + j] <= left) {
                choice[row] = j;
                left -= tokens[row * k + j];
                taken++;
                break;
            }
        }
    }
    result = Py_None;
    Py_INCREF(result);
release:
    release_buffers(b, 4);
    return result;
}

/* numpy's float64 sum of a contiguous array (pairwise: blocks of up to 128 summed by 8
   accumulators, halves at a multiple of 8 above that), so that a sum taken here is the same
   float as numpy's. native.py checks the two agree on this install before relying on it. */
static double pairwise_sum(const double *a, size_t n) {
    if (n < 8) {
        double res = 0.;
        for (size_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++) r[j] = a[j];
        size_t i;
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

static PyObject *kernel_sum(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    if (view.len % 8) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "sum: a float64 buffer");
        return NULL;
    }
    double total = pairwise_sum(view.buf, (size_t)view.len / 8);
    PyBuffer_Release(&view);
    return PyFloat_FromDouble(total);
}

/* scale_values' first pass (the usual factor): each row's best net value into best, the values and
   the usable mask, and the OR of the usable levels' tokens and values into *width (Problem.width).
   Returns 1 where a check fails (stopping there when `check`). */
static int scale_usual(Py_ssize_t n, Py_ssize_t k, const int64_t *t, const double *u, const uint8_t *mask,
                       int64_t budget, double price, int check, double max_utility, double usual, double *best,
                       int64_t *values, uint8_t *usable, uint64_t *width) {
    int refused = 0;
    uint64_t wide = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double top = 0.0;
        for (size_t j = (size_t)i * (size_t)k; j < (size_t)(i + 1) * (size_t)k; j++) {
            int offered = !mask || mask[j];
            if (offered && (t[j] < 0 || !(u[j] >= 0.0 && u[j] <= max_utility))) {  /* NaN fails */
                if (check) return 1;
                refused = 1;
            }
            offered = offered && t[j] <= budget;
            double net = offered ? u[j] - price * (double)t[j] : 0.0;
            if (offered && net > top) top = net;
            double at = net * usual;  /* past 2**63 only when the factor is redone */
            values[j] = at < 4e18 ? round_to_int64(at) : 0;
            usable[j] = (uint8_t)(offered && values[j] > 0);
            wide |= usable[j] ? (uint64_t)t[j] | (uint64_t)values[j] : 0;
        }
        best[i] = top;
    }
    *width = wide;
    return refused;
}

#ifdef X86_VECTORS
/* Four usable flags (bits of a movemask) as four bytes, little-endian. */
static const uint32_t FLAG_BYTES[16] = {
    0x00000000u, 0x00000001u, 0x00000100u, 0x00000101u, 0x00010000u, 0x00010001u, 0x00010100u, 0x00010101u,
    0x01000000u, 0x01000001u, 0x01000100u, 0x01000101u, 0x01010000u, 0x01010001u, 0x01010100u, 0x01010101u};
static int vector_scaling = -1;  /* -1: not yet asked (AVX2 on this CPU); tests switch it */

/* scale_values' first pass (the usual factor) four levels at a time with AVX2, the same numbers to the
   bit: the same IEEE operations per level; tokens convert exactly through 2**52 (an offered level's
   tokens are at most the budget, below 2**40) and values round to nearest, ties to even, through
   1.5 * 2**52, as cvtsd2si does in the default rounding mode (nothing here changes it), exact where
   |value| < 2**51. The levels past that, and offered levels with negative tokens, are redone one by
   one as the scalar loop does them. The levels are taken as one run, across rows: in place of each
   row's best net value, the sum of every positive net value into *positive (at least the sum of the
   rows' bests, which scale_values then needs only where this sum does not settle the factor).
   Returns 1 where a check fails. */
__attribute__((target("avx2"))) static int scale_usual_avx2(size_t cells, const int64_t *t, const double *u,
                                                             const uint8_t *mask, int64_t budget, double price,
                                                             double max_utility, double usual, int64_t *values,
                                                             uint8_t *usable, uint64_t *width, double *positive) {
    const __m256d v_usual = _mm256_set1_pd(usual), v_price = _mm256_set1_pd(price), v_max = _mm256_set1_pd(max_utility);
    const __m256d v_zero = _mm256_setzero_pd(), v_two52 = _mm256_set1_pd(4503599627370496.0);
    const __m256d v_round = _mm256_set1_pd(6755399441055744.0), v_limit = _mm256_set1_pd(2251799813685248.0);
    const __m256d v_abs = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFLL));
    const __m256i v_two52_bits = _mm256_castpd_si256(v_two52), v_round_bits = _mm256_castpd_si256(v_round);
    const __m256i v_budget = _mm256_set1_epi64x(budget), zero = _mm256_setzero_si256();
    const __m256i all = _mm256_cmpeq_epi64(zero, zero);
    __m256d refused = v_zero, sum4 = v_zero;
    __m256i wide4 = zero;  /* (the lanes redone below add theirs) */
    uint64_t width_one = 0;
    double sum_one = 0.0;
    int refused_one = 0;
    size_t wide = cells & ~(size_t)3, j = 0;
    for (; j < wide; j += 4) {
        __m256i T = _mm256_loadu_si256((const __m256i *)(t + j));
        __m256d U = _mm256_loadu_pd(u + j);
        __m256i offered = all;
        if (mask) {
            int32_t bytes;
            memcpy(&bytes, mask + j, 4);
            __m256i flags = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(bytes));
            offered = _mm256_xor_si256(_mm256_cmpeq_epi64(flags, zero), all);
        }
        __m256d fine = _mm256_and_pd(_mm256_cmp_pd(U, v_zero, _CMP_GE_OQ), _mm256_cmp_pd(U, v_max, _CMP_LE_OQ));
        __m256d wrong = _mm256_or_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(zero, T)),
                                     _mm256_andnot_pd(fine, _mm256_castsi256_pd(all)));
        refused = _mm256_or_pd(refused, _mm256_and_pd(_mm256_castsi256_pd(offered), wrong));
        offered = _mm256_andnot_si256(_mm256_cmpgt_epi64(T, v_budget), offered);
        /* offered negative tokens (refused where checked; solve_job's inputs are checked before) are
           redone one by one: the conversion below holds for 0 <= tokens < 2**52 */
        __m256i negative = _mm256_and_si256(offered, _mm256_cmpgt_epi64(zero, T));
        __m256d Td = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(T, v_two52_bits)), v_two52);
        __m256d net = _mm256_and_pd(_mm256_sub_pd(U, _mm256_mul_pd(v_price, Td)),
                                    _mm256_castsi256_pd(_mm256_andnot_si256(negative, offered)));
        __m256d at = _mm256_mul_pd(net, v_usual);
        __m256i V = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(at, v_round)), v_round_bits);
        __m256d inside4 = _mm256_cmp_pd(_mm256_and_pd(at, v_abs), v_limit, _CMP_LT_OQ);
        int inside = _mm256_movemask_pd(inside4);
        /* the lanes redone below add their own (a NaN net, refused, leaves its 0) */
        sum4 = _mm256_add_pd(sum4, _mm256_max_pd(_mm256_and_pd(net, inside4), v_zero));
        _mm256_storeu_si256((__m256i *)(values + j), V);
        __m256i on_v = _mm256_and_si256(offered, _mm256_cmpgt_epi64(V, zero));
        wide4 = _mm256_or_si256(wide4, _mm256_and_si256(_mm256_and_si256(on_v, _mm256_castpd_si256(inside4)),
                                                        _mm256_or_si256(T, V)));
        int flags = _mm256_movemask_pd(_mm256_castsi256_pd(on_v));
        memcpy(usable + j, &FLAG_BYTES[flags], 4);
        int redo = (~inside | _mm256_movemask_pd(_mm256_castsi256_pd(negative))) & 15;
        if (redo) {
            int lanes = _mm256_movemask_pd(_mm256_castsi256_pd(offered));
            for (int l = 0; l < 4; l++) {
                if (!(redo >> l & 1)) continue;
                int on = lanes >> l & 1;
                double lane_net = on ? u[j + l] - price * (double)t[j + l] : 0.0;
                sum_one += lane_net > 0.0 ? lane_net : 0.0;
                double lane_at = lane_net * usual;
                values[j + l] = lane_at < 4e18 ? round_to_int64(lane_at) : 0;
                usable[j + l] = (uint8_t)(on && values[j + l] > 0);
                width_one |= usable[j + l] ? (uint64_t)t[j + l] | (uint64_t)values[j + l] : 0;
            }
        }
    }
    for (; j < cells; j++) {
        int on = !mask || mask[j];
        refused_one |= on && (t[j] < 0 || !(u[j] >= 0.0 && u[j] <= max_utility));
        on = on && t[j] <= budget;
        double net = on ? u[j] - price * (double)t[j] : 0.0;
        sum_one += net > 0.0 ? net : 0.0;
        double at = net * usual;
        values[j] = at < 4e18 ? round_to_int64(at) : 0;
        usable[j] = (uint8_t)(on && values[j] > 0);
        width_one |= usable[j] ? (uint64_t)t[j] | (uint64_t)values[j] : 0;
    }
    uint64_t lanes[4];
    double sums[4];
    _mm256_storeu_si256((__m256i *)lanes, wide4);
    _mm256_storeu_pd(sums, sum4);
    *width = width_one | lanes[0] | lanes[1] | lanes[2] | lanes[3];
    *positive = sum_one + ((sums[0] + sums[1]) + (sums[2] + sums[3]));
    return refused_one || _mm256_movemask_pd(refused);
}

static int vectors_on(void) {
    if (vector_scaling < 0) vector_scaling = __builtin_cpu_supports("avx2") ? 1 : 0;
    return vector_scaling;
}
#endif

/* Scaling as instance.scale does it, in one pass (checks when `check`: the input checks of
   make_instance; a refused input returns -1): each row's best net value, the values at the usual
   factor (MAX_SCALE), redone only when the sum of the bests calls for a smaller one (numpy's
   summation, so the factor and the integers are identical). best: scratch for n doubles. */
static int scale_values(Py_ssize_t n, Py_ssize_t k, const int64_t *t, const double *u, const uint8_t *mask,
                        int64_t budget, double price, int check, double max_utility, double *best, int64_t *values,
                        uint8_t *usable, double *factor_out, uint64_t *width) {
    size_t cells = (size_t)n * (size_t)k;
    const double usual = 1000000.0, room = 4503599627370496.0;  /* 2**52 */
    int refused, bests = 1;
#ifdef X86_VECTORS
    if (vectors_on()) {
        double positive;
        refused = scale_usual_avx2(cells, t, u, mask, budget, price, max_utility, usual, values, usable, width,
                                   &positive);
        /* the rows' bests sum to at most the positive net values' sum (each best is one of its row's, or
           0), the computed sums within far less than 2**-20 of the exact ones (four lanes summed in turn:
           up to about 10**10 levels, far past any array here): where that bound times
           the usual factor stays below 2**52, so does numpy's sum of the bests, and the factor is the
           usual one (a NaN bound asks the rows) */
        bests = !(positive * usual * (1.0 + 0x1p-20) < room);
    } else
#endif
        refused = scale_usual(n, k, t, u, mask, budget, price, check, max_utility, usual, best, values, usable, width);
    if (check && refused) return -1;
    double factor = usual;
    if (bests) {
#ifdef X86_VECTORS
        /* the rows' bests from the scalar pass, which also writes the same values, flags and width again
           (only where the factor is in doubt, mostly followed by the second pass below anyway) */
        if (vectors_on())
            scale_usual(n, k, t, u, mask, budget, price, 0, max_utility, usual, best, values, usable, width);
#endif
        double total = n ? pairwise_sum(best, (size_t)n) : 0.0;
        factor = total * usual < room ? usual : room / total;
    }
    if (factor != usual) {
        uint64_t wide = 0;
        for (size_t j = 0; j < cells; j++) {
            int offered = (!mask || mask[j]) && t[j] <= budget;
            double net = offered ? u[j] - price * (double)t[j] : 0.0;
            values[j] = round_to_int64(net * factor);
            usable[j] = (uint8_t)(offered && values[j] > 0);
            wide |= usable[j] ? (uint64_t)t[j] | (uint64_t)values[j] : 0;
        }
        *width = wide;
    }
    *factor_out = factor;
    return 0;
}

/* An allocation as instance.evaluate and scaled_value give it: kept rows, tokens, scaled value,
   and, summed in row order as numpy sums them, the net value and the utility of the chosen
   levels (net, util: scratch for n doubles). Returns -1 when a chosen level is not usable. */
static int evaluate_choice(Py_ssize_t n, Py_ssize_t k, const int64_t *t, const double *u, double price,
                           const int64_t *values, const uint8_t *usable, const int64_t *choice, double *net,
                           double *util, size_t *kept_out, int64_t *used_out, int64_t *worth_out,
                           double *objective, double *utility) {
    size_t kept = 0;
    int64_t used = 0, worth = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t c = choice[i];
        if (c < 0) continue;
        size_t j = (size_t)i * (size_t)k + (size_t)c;
        if (c >= k || !usable[j]) return -1;
        used += t[j];
        worth += values[j];
        net[kept] = u[j] - price * (double)t[j];
        if (util) util[kept] = u[j];
        kept++;
    }
    *kept_out = kept; *used_out = used; *worth_out = worth;
    *objective = pairwise_sum(net, kept);
    if (util) *utility = pairwise_sum(util, kept);
    return 0;
}

/* The whole exact solve of solve_arrays in one call: the input checks of make_instance, the
   scaling of instance.scale (the same IEEE operations and numpy's summation, so the integers are
   identical), the kernel's solve with the tie rule, and the allocation's objective, tokens and
   the check that it is worth what the search proved. Returns (objective, tokens_used), or None
   wherever the Python path must answer: an input it would refuse (it words the error), a count
   limit the allocation breaks (a price per record is needed), the search's state limit, or ties
   it orders otherwise (the tie rule not applied and bounded_ties false). */
static PyObject *kernel_solve_arrays(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_tokens, *o_utility, *o_mask, *o_choice;
    Py_ssize_t n, k;
    long long budget, limit;
    double price, max_utility;
    int bounded_ties;
    if (!PyArg_ParseTuple(args, "nnOOOLdLpdO", &n, &k, &o_tokens, &o_utility, &o_mask, &budget, &price, &limit,
                          &bounded_ties, &max_utility, &o_choice))
        return NULL;
    if (k < 0 || k > 62 || n < 0) {
        PyErr_SetString(PyExc_ValueError, "the kernel takes 0..62 levels per row");
        return NULL;
    }
    int has_mask = o_mask != Py_None;
    const Argument arg[] = {
        {o_tokens, 8, 0, "tokens", n * k * 8}, {o_utility, 8, 0, "utility", n * k * 8}, {o_choice, 8, 1, "choice", n * 8},
        {o_mask, 1, 0, "mask", n * k},
    };
    Py_buffer b[4];
    if (take_buffers(arg, b, has_mask ? 4 : 3) < 0) return NULL;
    PyObject *out = NULL;
    const int64_t *t = b[0].buf;
    const double *u = b[1].buf;
    const uint8_t *mask = has_mask ? b[3].buf : NULL;
    int64_t *choice = b[2].buf;
    size_t cells = (size_t)n * (size_t)k;
    if (budget < 0 || budget >= ((long long)1 << 40) || !(price >= 0.0) || isinf(price)) goto fallback;
    {
        double *best = scratch(W_BEST, (size_t)n, sizeof(double));
        int64_t *values = scratch(W_VALUES, cells, sizeof(int64_t));
        uint8_t *usable = scratch(W_USABLE, cells, 1);
        uint8_t *keep = scratch(W_KEEP, (size_t)n * (size_t)(k + 1), 1);
        int64_t *core = scratch(W_CORE, (size_t)n, sizeof(int64_t));
        if (!best || !values || !usable || !keep || !core) { PyErr_NoMemory(); goto release; }
        double factor;
        uint64_t width;
        if (scale_values(n, k, t, u, mask, budget, price, 1, max_utility, best, values, usable, &factor, &width) < 0)
            goto fallback;
        Problem P = {n, k, t, values, usable, (int64_t)budget, 0, 1, 0, band_mode(n), width, 1};
        Info info = {{0}, 0.0};
        int rc = solve(&P, choice, keep, core, bounded_ties, &info);
        if (rc < 0) { PyErr_NoMemory(); goto release; }
        if (rc == 2) { PyErr_SetString(PyExc_RuntimeError, "kernel: the tie-rule states lost the optimum"); goto release; }
        if (rc == 1 || (!info.v[9] && !bounded_ties)) goto fallback;
        /* the allocation: kept count, tokens, scaled value and the objective (best[] is free again) */
        size_t kept;
        int64_t used, worth;
        double objective;
        if (evaluate_choice(n, k, t, u, price, values, usable, choice, best, NULL, &kept, &used, &worth, &objective,
                            NULL) < 0) {
            PyErr_SetString(PyExc_RuntimeError, "kernel: chose a level that is not offered");
            goto release;
        }
        if (limit >= 0 && (long long)kept > limit) goto fallback;
        if (worth != info.v[3] || used != info.v[4] || used > budget) {
            PyErr_Format(PyExc_RuntimeError, "kernel: reported value %lld with %lld tokens, but its allocation is "
                         "worth %lld with %lld", (long long)info.v[3], (long long)info.v[4], (long long)worth,
                         (long long)used);
            goto release;
        }
        out = Py_BuildValue("(dLi)", objective, (long long)used, (int)info.v[9]);
        goto release;
    }
fallback:
    out = Py_None;
    Py_INCREF(out);
release:
    release_buffers(b, has_mask ? 4 : 3);
    trim_workspace();
    return out;
}

/* The engine's Job in one call (kernel.solve_job): instance.scale's values, usable mask and factor
   into the caller's arrays, the kernel's solve, and the allocation as make_solution evaluates it.
   Returns (factor, info, objective, utility, tokens_used, scaled_value, kept); info is None past
   the search's state limit (the scaled arrays are still written, and the objective fields are 0). */
static PyObject *kernel_solve_job(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_tokens, *o_utility, *o_mask, *o_values, *o_usable, *o_choice, *o_keep, *o_core;
    Py_ssize_t n, k;
    long long budget;
    double price;
    int mode;
    if (!PyArg_ParseTuple(args, "nnOOOLdiOOOOO", &n, &k, &o_tokens, &o_utility, &o_mask, &budget, &price, &mode,
                          &o_values, &o_usable, &o_choice, &o_keep, &o_core))
        return NULL;
    if (k < 0 || k > 62 || n < 0 || budget < 0 || budget >= ((long long)1 << 40)) {
        PyErr_SetString(PyExc_ValueError, "the kernel takes 0..62 levels per row and budgets below 2**40");
        return NULL;
    }
    const Argument arg[] = {
        {o_tokens, 8, 0, "tokens", n * k * 8}, {o_utility, 8, 0, "utility", n * k * 8}, {o_mask, 1, 0, "mask", n * k},
        {o_values, 8, 1, "values", n * k * 8}, {o_usable, 1, 1, "usable", n * k}, {o_choice, 8, 1, "choice", n * 8},
        {o_keep, 1, 1, "keep", n * (k + 1)}, {o_core, 8, 1, "core", n * 8},
    };
    Py_buffer b[8];
    if (take_buffers(arg, b, 8) < 0) return NULL;
    PyObject *out = NULL;
    const int64_t *t = b[0].buf;
    const double *u = b[1].buf;
    int64_t *values = b[3].buf, *choice = b[5].buf;
    uint8_t *usable = b[4].buf;
    double *best = scratch(W_BEST, (size_t)n, sizeof(double));
    double *util = scratch(W_UTIL, (size_t)n, sizeof(double));
    if (!best || !util) { PyErr_NoMemory(); goto release; }
    double factor;
    uint64_t width;
    scale_values(n, k, t, u, b[2].buf, budget, price, 0, 0.0, best, values, usable, &factor, &width);
    Problem P = {n, k, t, values, usable, (int64_t)budget, 0, 1, 0, band_mode(n), width, 1};
    Info info = {{0}, 0.0};
    int rc = solve(&P, choice, b[6].buf, b[7].buf, mode, &info);
    if (rc < 0) { PyErr_NoMemory(); goto release; }
    if (rc == 2) { PyErr_SetString(PyExc_RuntimeError, "kernel: the tie-rule states lost the optimum"); goto release; }
    if (rc == 1) { out = Py_BuildValue("(dOddLLn)", factor, Py_None, 0.0, 0.0, 0LL, 0LL, (Py_ssize_t)0); goto release; }
    size_t kept;
    int64_t used, worth;
    double objective, utility;
    if (evaluate_choice(n, k, t, u, price, values, usable, choice, best, util, &kept, &used, &worth, &objective,
                        &utility) < 0) {
        PyErr_SetString(PyExc_RuntimeError, "kernel: chose a level that is not offered");
        goto release;
    }
    PyObject *info_obj = info_tuple(&info);
    if (!info_obj) goto release;
    out = Py_BuildValue("(dNddLLn)", factor, info_obj, objective, utility, (long long)used, (long long)worth,
                        (Py_ssize_t)kept);
release:
    release_buffers(b, 8);
    trim_workspace();
    return out;
}

/* Tests: vector_scaling(on) switches scale_values' AVX2 pass (where the CPU has AVX2); returns whether
   it is on after the call. */
static PyObject *kernel_vector_scaling(PyObject *self, PyObject *args) {
    (void)self;
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
#ifdef X86_VECTORS
    vector_scaling = on && __builtin_cpu_supports("avx2");
    return PyBool_FromLong(vector_scaling);
#else
    (void)on;
    Py_RETURN_FALSE;
#endif
}

/* Tests: merge_chunk(points) sets the points a merge hands over at a time (0: the default; at most
   2**20); returns the previous. */
static PyObject *kernel_merge_chunk(PyObject *self, PyObject *args) {
    (void)self;
    Py_ssize_t points;
    if (!PyArg_ParseTuple(args, "n", &points)) return NULL;
    size_t before = merge_chunk;
    merge_chunk = points <= 0 ? MERGE_CHUNK : points > (1 << 20) ? (size_t)1 << 20 : (size_t)points;
    return PyLong_FromSize_t(before);
}

/* A test switch: sets *flag from the one argument's truth; returns it. */
static PyObject *set_switch(PyObject *args, int *flag) {
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    *flag = on;
    return PyBool_FromLong(*flag);
}

/* Tests: merge_pairs(on) switches merge_two for two copies (else merge_next's scan). */
static PyObject *kernel_merge_pairs(PyObject *self, PyObject *args) { (void)self; return set_switch(args, &merge_pairs); }

/* Tests: riffle(on) switches the riffled order of many tied candidates (else quickselect's). */
static PyObject *kernel_riffle(PyObject *self, PyObject *args) { (void)self; return set_switch(args, &riffle_tied); }

/* Tests: grid(mode) sets the band's grid: 0 none (the band as without AVX-512), 1 AVX-512 where the CPU
   has it (else none), 2 the twin in plain C, -1 as the CPU says (the default); returns the mode now in
   force. */
static PyObject *kernel_grid(PyObject *self, PyObject *args) {
    (void)self;
    int mode;
    if (!PyArg_ParseTuple(args, "i", &mode)) return NULL;
    grid_vectors = -1;
    if (mode == 1) grid_vectors = grid_on();
    else if (mode == 0 || mode == 2) grid_vectors = mode;
    return PyLong_FromLong(grid_on());
}

/* ---- The counted core DP: core.pareto_dp_counted's states in C ----------------------------------
   Layer r holds the states of rows r..n-1 as (tokens, value) pairs grouped by count (records kept),
   each group sorted by tokens with values rising: the Pareto set of its count, less the states that
   the group of one record fewer beats (as light and as valuable). Candidates are pruned by the
   Lagrangian bound with lam per token and mu per record, as the numpy version does; reconstruction
   gives each row its highest fidelity that still completes the optimum's tokens and value within
   the records left. Returns 0, 1 past max_states or max_work, 2 when no state is left (no
   allocation reaches the floor), 3 when reconstruction fails (a bug), -1 out of memory. */
typedef struct {
    Vec states;      /* Pair, every layer's */
    Vec groups;      /* size_t: per layer, count + 1 offsets into states, from the layer's first state */
    size_t *layer;   /* [n + 1]: each layer's first state */
    size_t *group;   /* [n + 1]: each layer's first offset in groups */
    Py_ssize_t *counts; /* [n + 1]: each layer's number of count groups */
} Counted;

static int counted_push(Vec *vec, const void *item) {
    if (vec_reserve(vec, 1) < 0) return -1;
    memcpy((char *)vec->a + vec->len * vec->size, item, vec->size);
    vec->len++;
    return 0;
}

/* The state of count group c of layer r with these tokens and value exists. */
static int counted_has(const Counted *C, Py_ssize_t r, Py_ssize_t c, int64_t w, int64_t v) {
    const Pair *s = (const Pair *)C->states.a + C->layer[r];
    const size_t *g = (const size_t *)C->groups.a + C->group[r];
    size_t lo = g[c], hi = g[c + 1];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].w < w) lo = mid + 1;
        else hi = mid;
    }
    return lo < g[c + 1] && s[lo].w == w && s[lo].v == v;
}

static int counted_dp(Py_ssize_t n, Py_ssize_t k, const int64_t *tokens, const int64_t *values,
                      const uint8_t *usable, const uint8_t *delete_ok, int64_t capacity, int64_t limit, double lam,
                      double mu, int64_t floor, size_t max_states, size_t max_work, int64_t *choice) {
    int rc = -1;
    Counted C = {{NULL, 0, 0, sizeof(Pair)}, {NULL, 0, 0, sizeof(size_t)}, NULL, NULL, NULL};
    double *prefix = malloc((size_t)(n + 1) * sizeof(double));
    C.layer = malloc((size_t)(n + 1) * sizeof(size_t));
    C.group = malloc((size_t)(n + 1) * sizeof(size_t));
    C.counts = malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    if (!prefix || !C.layer || !C.group || !C.counts) goto done;
    /* the bound of the rows before each layer: each row's best reduced value at (lam, mu) */
    prefix[0] = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double best = -HUGE_VAL;
        for (Py_ssize_t j = 0; j < k; j++)
            if (usable[i * k + j]) {
                double r = (double)values[i * k + j] - lam * (double)tokens[i * k + j] - mu;
                if (r > best) best = r;
            }
        if (delete_ok[i] && best < 0.0) best = 0.0;
        prefix[i + 1] = prefix[i] + best;
    }
    double slack = 1e-9 * (fabs(prefix[n]) + lam * (double)capacity + mu * (double)limit) + 1.0;
    double need = (double)floor - slack;
    /* layer n: the empty suffix */
    Pair empty = {0, 0};
    size_t zero = 0, one = 1;
    C.layer[n] = 0; C.group[n] = 0; C.counts[n] = 1;
    if (counted_push(&C.states, &empty) < 0 || counted_push(&C.groups, &zero) < 0 || counted_push(&C.groups, &one) < 0)
        goto done;
    size_t work = 0;
    Py_ssize_t most = limit < (int64_t)n ? (Py_ssize_t)limit : n;  /* records a state may keep */
    for (Py_ssize_t r = n - 1; r >= 0; r--) {
        size_t prev_at = C.layer[r + 1], prev_len = C.states.len - prev_at;
        Py_ssize_t prev_counts = C.counts[r + 1];
        size_t levels = delete_ok[r] ? 1 : 0;
        for (Py_ssize_t j = 0; j < k; j++) levels += usable[r * k + j];
        work += levels * prev_len;
        if (work > max_work) { rc = 1; goto done; }
        Py_ssize_t counts = prev_counts + 1 <= most + 1 ? prev_counts + 1 : most + 1;
        C.layer[r] = C.states.len;
        C.group[r] = C.groups.len;
        if (counted_push(&C.groups, &zero) < 0) goto done;
        for (Py_ssize_t c = 0; c < counts; c++) {
            /* the sources of count c: the group of c kept as it is (delete), the group of c - 1 shifted by
               each usable level; the layer array may move as it grows, so offsets, not pointers */
            const size_t *pg = (const size_t *)C.groups.a + C.group[r + 1];
            Py_ssize_t level[64], sources = 0;  /* each source's level (-1: delete) */
            if (delete_ok[r] && c < prev_counts) level[sources++] = -1;
            if (c >= 1 && c - 1 < prev_counts)
                for (Py_ssize_t j = 0; j < k; j++)
                    if (usable[r * k + j]) level[sources++] = j;
            size_t pos[64], stop[64];  /* each source's next and end, from the previous layer's first state */
            for (Py_ssize_t s = 0; s < sources; s++) {
                Py_ssize_t from = level[s] < 0 ? c : c - 1;
                pos[s] = pg[from];
                stop[s] = pg[from + 1];
            }
            /* the group of c - 1 in this layer (none for c = 0): the states just before this group's */
            size_t below_end = C.states.len;
            size_t below_at = c ? C.layer[r] + ((const size_t *)C.groups.a)[C.group[r] + c - 1] : below_end;
            int have_best = 0;
            int64_t best_v = 0;
            for (;;) {
                Py_ssize_t pick = -1;
                int64_t pw = 0, pv = 0;
                for (Py_ssize_t s = 0; s < sources; s++) {
                    if (pos[s] >= stop[s]) continue;
                    const Pair *p = (const Pair *)C.states.a + prev_at + pos[s];
                    int64_t w = p->w, v = p->v;
                    if (level[s] >= 0) { w += tokens[r * k + level[s]]; v += values[r * k + level[s]]; }
                    if (pick < 0 || w < pw || (w == pw && v > pv)) { pick = s; pw = w; pv = v; }
                }
                if (pick < 0) break;
                pos[pick]++;
                if (pw > capacity) {
                    /* every later state of this source is heavier still */
                    pos[pick] = stop[pick];
                    continue;
                }
                if (have_best && pv <= best_v) continue;  /* a lighter state of this count is worth as much */
                have_best = 1;
                best_v = pv;
                double bound = (double)pv + lam * (double)(capacity - pw) + mu * (double)(limit - c) + prefix[r];
                if (bound < need) continue;
                const Pair *below = (const Pair *)C.states.a;
                while (below_at + 1 < below_end && below[below_at + 1].w <= pw) below_at++;
                if (below_at < below_end && below[below_at].w <= pw && below[below_at].v >= pv) continue;
                Pair state = {pw, pv};
                if (counted_push(&C.states, &state) < 0) goto done;
            }
            size_t offset = C.states.len - C.layer[r];
            if (counted_push(&C.groups, &offset) < 0) goto done;
        }
        C.counts[r] = counts;
        if (C.states.len - C.layer[r] > max_states) { rc = 1; goto done; }
    }
    /* the optimum: most value, then fewest tokens */
    size_t first = C.layer[0], last = C.states.len;
    if (first == last) { rc = 2; goto done; }
    const Pair *s0 = (const Pair *)C.states.a;
    int64_t target_w = s0[first].w, target_v = s0[first].v;
    for (size_t at = first + 1; at < last; at++)
        if (s0[at].v > target_v || (s0[at].v == target_v && s0[at].w < target_w)) { target_w = s0[at].w; target_v = s0[at].v; }
    int64_t room = limit;
    for (Py_ssize_t r = 0; r < n; r++) {
        int found = 0;
        for (Py_ssize_t j = 0; j <= k && !found; j++) {  /* highest fidelity first, delete (j = k) last */
            if (j < k ? !usable[r * k + j] : !delete_ok[r]) continue;
            int64_t dw = j < k ? tokens[r * k + j] : 0, dv = j < k ? values[r * k + j] : 0;
            int64_t left = room - (j < k);
            for (Py_ssize_t c = 0; c < C.counts[r + 1] && c <= left; c++)
                if (counted_has(&C, r + 1, c, target_w - dw, target_v - dv)) {
                    choice[r] = j < k ? j : -1;
                    target_w -= dw; target_v -= dv; room = left;
                    found = 1;
                    break;
                }
        }
        if (!found) { rc = 3; goto done; }  /* a bug: the states lost the optimum's suffix */
    }
    rc = 0;
done:
    free(prefix); free(C.layer); free(C.group); free(C.counts);
    release_vec(&C.states); release_vec(&C.groups);
    return rc;
}

/* counted_dp(n, k, tokens, values, usable, delete_ok, capacity, limit, lam, mu, floor, max_states, max_work, choice)
   -> 0, or 1 past the state limits (choice untouched), 2 when no state reaches the floor, 3 a bug */
static PyObject *kernel_counted_dp(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_tokens, *o_values, *o_usable, *o_delete, *o_choice;
    Py_ssize_t n, k, max_states, max_work;
    long long capacity, limit, floor;
    double lam, mu;
    if (!PyArg_ParseTuple(args, "nnOOOOLLddLnnO", &n, &k, &o_tokens, &o_values, &o_usable, &o_delete, &capacity,
                          &limit, &lam, &mu, &floor, &max_states, &max_work, &o_choice))
        return NULL;
    if (k < 0 || k > 62 || n < 0 || capacity < 0 || limit < 0 || max_states < 0 || max_work < 0) {
        PyErr_SetString(PyExc_ValueError, "counted_dp takes 0..62 levels per row and limits >= 0");
        return NULL;
    }
    const Argument arg[] = {
        {o_tokens, 8, 0, "tokens", n * k * 8}, {o_values, 8, 0, "values", n * k * 8}, {o_usable, 1, 0, "usable", n * k},
        {o_delete, 1, 0, "delete_ok", n}, {o_choice, 8, 1, "choice", n * 8},
    };
    Py_buffer b[5];
    if (take_buffers(arg, b, 5) < 0) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = counted_dp(n, k, b[0].buf, b[1].buf, b[2].buf, b[3].buf, capacity, limit, lam, mu, floor, (size_t)max_states,
                    (size_t)max_work, b[4].buf);
    Py_END_ALLOW_THREADS
    release_buffers(b, 5);
    if (rc < 0) return PyErr_NoMemory();
    return PyLong_FromLong(rc);
}

/* ---- tied._Edges in C: each suffix's fewest and most tokens by exact count, and the totals within 64
   tokens of either end it reaches -------------------------------------------------------------------
   Row r's cells from row r + 1's, as tied._Edges computes them in numpy (the same arithmetic, the
   unreachable sentinels included, so the tables are equal): most[r][c] = max(most[r+1][c] where the
   row may be deleted, heaviest[r] + most[r+1][c-1] where it may be kept), fewest likewise with min and
   lightest; bit d of below[r][c] says most[r][c] - d is reached, bit d of above[r][c] fewest + d.
   The callers' tables are (n + 1) x (counts + 1), filled with the sentinels and row n's cell 0. */
#define EDGE_BIG ((int64_t)1 << 62)
static inline uint64_t edge_shift(uint64_t bits, int64_t by) { return by >= 0 && by < 64 ? bits << by : 0; }

static void edges_fill(Py_ssize_t n, Py_ssize_t k, const int64_t *tokens, const uint8_t *level_ok,
                       const uint8_t *delete_ok, const uint8_t *keepable, const int64_t *lightest,
                       const int64_t *heaviest, Py_ssize_t counts, int64_t *most, int64_t *fewest, uint64_t *below,
                       uint64_t *above) {
    Py_ssize_t width = counts + 1;
    for (Py_ssize_t r = n - 1; r >= 0; r--) {
        Py_ssize_t top = (counts < n - r ? counts : n - r) + 1;
        const int64_t *m1 = most + (r + 1) * width, *f1 = fewest + (r + 1) * width;
        const uint64_t *b1 = below + (r + 1) * width, *a1 = above + (r + 1) * width;
        int64_t *m0 = most + r * width, *f0 = fewest + r * width;
        uint64_t *b0 = below + r * width, *a0 = above + r * width;
        int skip = delete_ok[r] != 0, keep = keepable[r] != 0;
        const int64_t *tw = tokens + r * k;
        const uint8_t *ok = level_ok + r * k;
        for (Py_ssize_t c = 0; c < top; c++) {
            int64_t most_1 = c ? m1[c - 1] : -EDGE_BIG, fewest_1 = c ? f1[c - 1] : EDGE_BIG;
            uint64_t below_1 = c ? b1[c - 1] : 0, above_1 = c ? a1[c - 1] : 0;
            int64_t sm = skip ? m1[c] : -EDGE_BIG, km = keep ? heaviest[r] + most_1 : -EDGE_BIG;
            int64_t sf = skip ? f1[c] : EDGE_BIG, kf = keep ? lightest[r] + fewest_1 : EDGE_BIG;
            int64_t new_most = sm > km ? sm : km, new_fewest = sf < kf ? sf : kf;
            uint64_t new_below = skip ? edge_shift(b1[c], new_most - m1[c]) : 0;
            uint64_t new_above = skip ? edge_shift(a1[c], f1[c] - new_fewest) : 0;
            if (keep && (below_1 | above_1))
                for (Py_ssize_t o = 0; o < k; o++) {
                    if (!ok[o]) continue;
                    new_below |= edge_shift(below_1, new_most - tw[o] - most_1);
                    new_above |= edge_shift(above_1, tw[o] + fewest_1 - new_fewest);
                }
            m0[c] = new_most; f0[c] = new_fewest; b0[c] = new_below; a0[c] = new_above;
        }
    }
}

/* edges(n, k, tokens, level_ok, delete_ok, keepable, lightest, heaviest, counts, most, fewest, below, above):
   tied._Edges' tables, filled in place */
static PyObject *kernel_edges(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[12];
    Py_ssize_t n, k, counts;
    if (!PyArg_ParseTuple(args, "nnOOOOOOnOOOO", &n, &k, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &counts, &o[6],
                          &o[7], &o[8], &o[9]))
        return NULL;
    if (k < 0 || n < 0 || counts < 0) {
        PyErr_SetString(PyExc_ValueError, "edges takes sizes >= 0");
        return NULL;
    }
    Py_ssize_t cells = (n + 1) * (counts + 1);
    const Argument arg[] = {
        {o[0], 8, 0, "tokens", n * k * 8}, {o[1], 1, 0, "level_ok", n * k}, {o[2], 1, 0, "delete_ok", n},
        {o[3], 1, 0, "keepable", n}, {o[4], 8, 0, "lightest", n * 8}, {o[5], 8, 0, "heaviest", n * 8},
        {o[6], 8, 1, "most", cells * 8}, {o[7], 8, 1, "fewest", cells * 8}, {o[8], 8, 1, "below", cells * 8},
        {o[9], 8, 1, "above", cells * 8},
    };
    Py_buffer b[10];
    if (take_buffers(arg, b, 10) < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    edges_fill(n, k, b[0].buf, b[1].buf, b[2].buf, b[3].buf, b[4].buf, b[5].buf, counts, b[6].buf, b[7].buf,
               b[8].buf, b[9].buf);
    Py_END_ALLOW_THREADS
    release_buffers(b, 10);
    Py_RETURN_NONE;
}

/* Tests: tied_rows(n, k, tokens, values, usable, p, q, vector, out) writes each row's tied-split numbers
   at lambda = p / q, six int64 a row (best, second, tied mask, lightest and heaviest best option, options),
   from tied_row_avx512 where vector (the CPU must have it: grid(1) == 1) else tied_row64. Rows must be
   narrow (their products with p and q fit 64 bits, their tokens below 2**58). */
static PyObject *kernel_tied_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4];
    Py_ssize_t n, k;
    long long p, q;
    int vector;
    if (!PyArg_ParseTuple(args, "nnOOOLLpO", &n, &k, &o[0], &o[1], &o[2], &p, &q, &vector, &o[3])) return NULL;
    if (n < 0 || k < 0 || k > 7 || p < 0 || q <= 0) {
        PyErr_SetString(PyExc_ValueError, "tied_rows takes n >= 0, 0 <= k <= 7, p >= 0, q > 0");
        return NULL;
    }
#ifdef X86_VECTORS
    if (vector && grid_on() != 1) {
#else
    if (vector) {
#endif
        PyErr_SetString(PyExc_ValueError, "tied_rows: no AVX-512 vectors here");
        return NULL;
    }
    const Argument arg[] = {
        {o[0], 8, 0, "tokens", n * k * 8}, {o[1], 8, 0, "values", n * k * 8}, {o[2], 1, 0, "usable", n * k},
        {o[3], 8, 1, "out", n * 6 * 8},
    };
    Py_buffer b[4];
    if (take_buffers(arg, b, 4) < 0) return NULL;
    Problem P = {n, k, b[0].buf, b[1].buf, b[2].buf, 0, p, q, 0, 0, UINT64_MAX, 0};
    int64_t *out = b[3].buf;
    int bits = 64 - __builtin_clzll((uint64_t)p | (uint64_t)q), vbits = bits < 4 ? 4 : bits;
    int refused = 0;
    for (Py_ssize_t i = 0; i < n && !refused; i++) {
        i128 best, second;
        uint64_t mask;
        int light, heaviest, options;
        if (vbits > 61 || !narrow_row(&P, i, vbits)) { refused = 1; break; }
#ifdef X86_VECTORS
        if (vector) tied_row_vector(&P, i, &best, &second, &mask, &light, &heaviest, &options);
        else
#endif
            tied_row64(&P, i, &best, &second, &mask, &light, &heaviest, &options);
        int64_t *row = out + 6 * i;
        row[0] = (int64_t)best; row[1] = (int64_t)second; row[2] = (int64_t)mask;
        row[3] = light; row[4] = heaviest; row[5] = options;
    }
    release_buffers(b, 4);
    if (refused) {
        PyErr_SetString(PyExc_ValueError, "tied_rows: a row is not narrow");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- tied._Ranges' walk in C: the head rows of the tie-rule walk by the necessary conditions -------
   Fenwick trees over the free rows' lightest and heaviest levels (ranks and sorted values from the
   caller, numpy's stable argsort), counts and sums; the walk and its test as tied._build runs them
   with _Ranges (the same choices: tests/solver/test_tied.py). */
typedef struct { Py_ssize_t size, present; int64_t total; int64_t *count, *sum; const int64_t *sorted; } Fenwick;

static int fenwick_init(Fenwick *f, Py_ssize_t size, const int64_t *sorted) {
    f->size = size; f->present = size; f->sorted = sorted; f->total = 0;
    f->count = calloc((size_t)size + 1, sizeof(int64_t));
    f->sum = calloc((size_t)size + 1, sizeof(int64_t));
    if (!f->count || !f->sum) return -1;
    for (Py_ssize_t i = 1; i <= size; i++) {  /* every value present: node i covers (i - lowbit(i), i] */
        f->count[i] += 1;
        f->sum[i] += sorted[i - 1];
        f->total += sorted[i - 1];
        Py_ssize_t up = i + (i & -i);
        if (up <= size) { f->count[up] += f->count[i]; f->sum[up] += f->sum[i]; }
    }
    return 0;
}

static void fenwick_remove(Fenwick *f, Py_ssize_t rank) {
    int64_t value = f->sorted[rank];
    f->present--;
    f->total -= value;
    for (Py_ssize_t i = rank + 1; i <= f->size; i += i & -i) { f->count[i]--; f->sum[i] -= value; }
}

/* the sum of the c smallest values present (0 <= c <= present) */
static int64_t fenwick_smallest(const Fenwick *f, int64_t c) {
    Py_ssize_t position = 0, step = 1;
    int64_t total = 0;
    while (step <= f->size) step <<= 1;
    for (; step; step >>= 1) {
        Py_ssize_t next = position + step;
        if (next <= f->size && f->count[next] <= c) { c -= f->count[next]; total += f->sum[next]; position = next; }
    }
    return total;
}

static int64_t fenwick_largest(const Fenwick *f, int64_t c) { return f->total - fenwick_smallest(f, f->present - c); }

typedef struct {
    const int64_t *must_count, *must_light, *must_heavy;
    Fenwick light, heavy;
    int exact;
} RangeTest;

static int range_completes(const RangeTest *t, Py_ssize_t after, int64_t count, int64_t room) {
    if (room < 0 || count < 0) return 0;
    int64_t extra = count - t->must_count[after], low, high;
    if (extra < 0) return 0;
    if (!t->exact) {
        low = t->must_light[after];
        high = t->must_heavy[after] + fenwick_largest(&t->heavy, extra < t->heavy.present ? extra : t->heavy.present);
    } else {
        if (extra > t->light.present) return 0;
        low = t->must_light[after] + fenwick_smallest(&t->light, extra);
        high = t->must_heavy[after] + fenwick_largest(&t->heavy, extra);
    }
    return low <= room && room <= high;
}

/* ranges_walk(n, k, tokens, level_ok, delete_ok, must_count, must_light, must_heavy, slot, light_rank,
   light_sorted, heavy_rank, heavy_sorted, head, budget, limit, exact, choice) -> (count, room) after the
   head rows, their levels in choice (-1 delete), or None where a row finds no completion */
static PyObject *kernel_ranges_walk(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[14];
    Py_ssize_t n, k, head;
    long long budget, limit;
    int exact;
    if (!PyArg_ParseTuple(args, "nnOOOOOOOOOOOnLLpO", &n, &k, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &head, &budget, &limit, &exact, &o[11]))
        return NULL;
    if (n < 0 || k < 0 || head < 0 || head > n) {
        PyErr_SetString(PyExc_ValueError, "ranges_walk takes 0 <= head <= n");
        return NULL;
    }
    Py_buffer probe;  /* the free rows' count: the sorted arrays' length */
    if (PyObject_GetBuffer(o[8], &probe, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    Py_ssize_t m = probe.len / 8;
    PyBuffer_Release(&probe);
    const Argument arg[] = {
        {o[0], 8, 0, "tokens", n * k * 8}, {o[1], 1, 0, "level_ok", n * k}, {o[2], 1, 0, "delete_ok", n},
        {o[3], 8, 0, "must_count", (n + 1) * 8}, {o[4], 8, 0, "must_light", (n + 1) * 8},
        {o[5], 8, 0, "must_heavy", (n + 1) * 8}, {o[6], 8, 0, "slot", n * 8}, {o[7], 8, 0, "light_rank", m * 8},
        {o[8], 8, 0, "light_sorted", m * 8}, {o[9], 8, 0, "heavy_rank", m * 8}, {o[10], 8, 0, "heavy_sorted", m * 8},
        {o[11], 8, 1, "choice", n * 8},
    };
    Py_buffer b[12];
    if (take_buffers(arg, b, 12) < 0) return NULL;
    const int64_t *tokens = b[0].buf, *slot = b[6].buf, *light_rank = b[7].buf, *heavy_rank = b[9].buf;
    const uint8_t *level_ok = b[1].buf, *delete_ok = b[2].buf;
    int64_t *choice = b[11].buf;
    RangeTest t = {b[3].buf, b[4].buf, b[5].buf, {0}, {0}, exact};
    PyObject *out = NULL;
    if (fenwick_init(&t.light, m, b[8].buf) < 0 || fenwick_init(&t.heavy, m, b[10].buf) < 0) {
        PyErr_NoMemory();
        goto release;
    }
    int64_t count = limit, room = budget;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t row = 0; row < head && !failed; row++) {
        if (slot[row] >= 0) {
            fenwick_remove(&t.light, (Py_ssize_t)light_rank[slot[row]]);
            fenwick_remove(&t.heavy, (Py_ssize_t)heavy_rank[slot[row]]);
        }
        int found = 0;
        for (Py_ssize_t lv = 0; lv < k && !found; lv++) {
            int64_t w = tokens[row * k + lv];
            if (level_ok[row * k + lv] && range_completes(&t, row + 1, count - 1, room - w)) {
                choice[row] = lv;
                count--;
                room -= w;
                found = 1;
            }
        }
        if (!found) {
            if (delete_ok[row] && range_completes(&t, row + 1, count, room)) choice[row] = -1;
            else failed = 1;  /* an earlier row's choice was let through but cannot be completed */
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        out = Py_None;
        Py_INCREF(out);
    } else {
        out = Py_BuildValue("(LL)", (long long)count, (long long)room);
    }
release:
    free(t.light.count); free(t.light.sum); free(t.heavy.count); free(t.heavy.sum);
    release_buffers(b, 12);
    return out;
}

static PyMethodDef methods[] = {
    {"solve", kernel_solve, METH_VARARGS,
     "solve(n, k, tokens, values, usable, capacity, choice, keep, core, bounded_ties[, at_once, banded, shortcut, "
     "state_limit]) -> "
     "info, or None past the limit (bounded_ties -1: the optimum only, no reduction nor tie rule; 2: as 1 with the tail "
     "by Pareto layers only; banded: -1 by the row count, 0 every hull, 1 band or tied split, 4 tied split only; tests: "
     "2 band forced, 3 a band one sample increment wide; shortcut: where the budget binds no row, the answer without "
     "search, as solve_arrays and solve_job take it; info's hull counts are -1 where a band was taken or the shortcut "
     "before the hulls; state_limit: states the search may generate, below its own limit)"},
    {"solve_arrays", kernel_solve_arrays, METH_VARARGS,
     "solve_arrays(n, k, tokens, utility, mask|None, budget, price, limit, bounded_ties, max_utility, choice) -> "
     "(objective, tokens_used, tie_rule), or None where the Python path answers"},
    {"solve_job", kernel_solve_job, METH_VARARGS,
     "solve_job(n, k, tokens, utility, mask, budget, price, mode, values, usable, choice, keep, core) -> "
     "(factor, info|None, objective, utility, tokens_used, scaled_value, kept)"},
    {"counted_dp", kernel_counted_dp, METH_VARARGS,
     "counted_dp(n, k, tokens, values, usable, delete_ok, capacity, limit, lam, mu, floor, max_states, max_work, choice) "
     "-> 0, 1 past the state limits, 2 when no state reaches the floor, 3 a bug (core.pareto_dp_counted in C)"},
    {"edges", kernel_edges, METH_VARARGS,
     "edges(n, k, tokens, level_ok, delete_ok, keepable, lightest, heaviest, counts, most, fewest, below, above): "
     "tied._Edges' tables, filled in place"},
    {"ranges_walk", kernel_ranges_walk, METH_VARARGS,
     "ranges_walk(n, k, tokens, level_ok, delete_ok, must_count, must_light, must_heavy, slot, light_rank, "
     "light_sorted, heavy_rank, heavy_sorted, head, budget, limit, exact, choice) -> (count, room) or None: "
     "tied._Ranges' walk of the head rows"},
    {"sum", kernel_sum, METH_VARARGS, "sum(float64 buffer) -> numpy's pairwise sum of it"},
    {"greedy", kernel_greedy, METH_VARARGS,
     "greedy(n, k, order, tokens, usable, budget, limit, choice): the greedy baseline's walk"},
    {"dual", kernel_dual, METH_VARARGS,
     "dual(levels, n, values, sizes, budget, lam, limit, scratch) -> (U(lam, mu), mu) for a count limit"},
    {"scale", kernel_scale, METH_VARARGS,
     "scale(n, k, tokens, utility, mask, price, budget, factor, out, usable): factor 0 -> row bests"},
    {"vector_scaling", kernel_vector_scaling, METH_VARARGS,
     "vector_scaling(on) -> whether scaling takes four levels at a time (AVX2) after the call (tests)"},
    {"tied_rows", kernel_tied_rows, METH_VARARGS,
     "tied_rows(n, k, tokens, values, usable, p, q, vector, out) -> None: the tied split's numbers a row (tests)"},
    {"merge_chunk", kernel_merge_chunk, METH_VARARGS,
     "merge_chunk(points) -> the points a layer's merge hands over at a time before the call; 0: the default (tests)"},
    {"merge_pairs", kernel_merge_pairs, METH_VARARGS,
     "merge_pairs(on) -> whether two copies of a layer merge in registers (else by merge_next) after the call (tests)"},
    {"riffle", kernel_riffle, METH_VARARGS,
     "riffle(on) -> whether many tied candidates are riffled (else ordered by quickselect) after the call (tests)"},
    {"grid", kernel_grid, METH_VARARGS,
     "grid(mode) -> the band's grid after the call: 0 none, 1 AVX-512, 2 plain C; -1 as the CPU says (tests)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel", "Compiled exact MCKP kernel.", -1, methods};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module); }
