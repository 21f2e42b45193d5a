/* sample.c: the sampling decision's cold half and its arithmetic (see
 * sample.h).  Async-signal-safe; never allocates or locks. */
#include <string.h>

#include "base/sys.h"
#include "invariant.h"
#include "sampling/sample.h"
#include "sampling/sites.h"

__thread int64_t sample_tls_left __attribute__((tls_model("initial-exec")));
static __thread uint64_t sample_tls_rng __attribute__((tls_model("initial-exec")));
int64_t sample_st_left;

/* The count in force for the calling thread (sample.h). */
static int64_t *sample_left(void)
{
	return __atomic_load_n(&counters_mt, __ATOMIC_RELAXED) ? &sample_tls_left : &sample_st_left;
}

void sample_go_multithreaded(void)
{
	sample_tls_left = sample_st_left;
}

void sample_go_single(void)
{
	sample_st_left = sample_tls_left;
}

static uint64_t sample_interval; /* R; 0 off */

#define SAMPLE_LN2 0.69314718055994530942

static double sample_pow2(int k)
{
	uint64_t bits;
	double d;
	if (k < -1022)
		return 0.0;
	bits = (uint64_t)(k + 1023) << 52;
	memcpy(&d, &bits, sizeof d);
	return d;
}

double sample_exp_neg(double x)
{
	double r, term, sum;
	int k;
	if (!(x > 0.0))
		return 1.0;
	if (x > 700.0)
		return 0.0;
	/* x = k ln 2 + r, 0 <= r < ln 2: e^-x = 2^-k e^-r. */
	k = (int)(x / SAMPLE_LN2);
	r = x - k * SAMPLE_LN2;
	term = 1.0;
	sum = 1.0;
	for (int i = 1; i <= 14; i++) {
		term *= -r / i;
		sum += term;
	}
	return sum * sample_pow2(-k);
}

double sample_log(double x)
{
	uint64_t bits;
	double m, s, s2, term, sum;
	int e;
	if (!(x > 0.0))
		return -745.0; /* below ln of the smallest double: "very unlikely" */
	memcpy(&bits, &x, sizeof bits);
	e = (int)((bits >> 52) & 0x7ff) - 1023;
	if (e == -1023)
		return -745.0; /* subnormal: as good as zero here */
	bits = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52);
	memcpy(&m, &bits, sizeof m); /* 1 <= m < 2 */
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	/* ln m = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172 */
	s = (m - 1.0) / (m + 1.0);
	s2 = s * s;
	term = s;
	sum = 0.0;
	for (int i = 1; i <= 23; i += 2) {
		sum += term / i;
		term *= s2;
	}
	return 2.0 * sum + e * SAMPLE_LN2;
}

uint64_t sample_next(uint64_t *state)
{
	uint64_t x = *state;
	/* sample.h: xorshift's one fixed point; seeds are never 0 */
	MT_ASSERT(x != 0);
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(0x2545F4914F6CDD1D);
}

uint64_t sample_draw(uint64_t *state, uint64_t rate)
{
	/* u in (0, 1]: 53 random bits, never 0. */
	double u = (double)((sample_next(state) >> 11) + 1) * (1.0 / 9007199254740992.0);
	double v = -sample_log(u) * (double)rate;
	return v >= 9.2e18 ? (uint64_t)INT64_MAX : (uint64_t)v;
}

uint64_t sample_weight(uint64_t size, uint64_t rate)
{
	double x, w;
	if (rate <= 1 || size == 0)
		return rate <= 1 ? size : rate;
	x = (double)size / (double)rate;
	if (x > 40.0)
		return size; /* exp(-40) is below a double's resolution near 1 */
	if (x < 1e-6)
		w = (double)rate * (1.0 + x / 2.0);
	else
		w = (double)size / (1.0 - sample_exp_neg(x));
	return (uint64_t)(w + 0.5);
}

uint64_t sample_var_kib2(uint64_t weight, uint64_t size)
{
	double v;
	if (weight <= size)
		return 0;
	v = (double)weight * (double)(weight - size) / 1048576.0;
	return v >= 1.8e19 ? UINT64_MAX : (uint64_t)(v + 0.5);
}

/* splitmix64: a seed from a few things that differ between threads and
 * processes; never 0. */
static uint64_t sample_seed(void)
{
	uint64_t z = sys_mono_ns_cold() ^ ((uint64_t)(uint32_t)sys_gettid() << 32) ^
		     (uint64_t)(uintptr_t)&z;
	z += UINT64_C(0x9E3779B97F4A7C15);
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	z ^= z >> 31;
	return z ? z : 1;
}

/* The count reached zero: 1 if this event is sampled, with its weight in
 * *weight (sample.h); draws the next count. */
static int sample_due(size_t usable, uint64_t *weight)
{
	uint64_t rate = __atomic_load_n(&sample_interval, __ATOMIC_RELAXED);
	int64_t *count = sample_left();
	int64_t left = *count;
	if (!rate) {
		*count = SAMPLE_IDLE;
		return 0;
	}
	if (rate == 1) {
		/* Every block: the count stays at zero. */
		*count = 0;
		*weight = usable;
		return 1;
	}
	if (!sample_tls_rng) {
		/* The thread's first count starts now; the bytes that brought us
		 * here (left <= 0) are the first to go against it. */
		sample_tls_rng = sample_seed();
		left += (int64_t)sample_draw(&sample_tls_rng, rate);
		*count = left;
		if (left > 0)
			return 0;
	}
	*count = (int64_t)sample_draw(&sample_tls_rng, rate);
	MT_ASSERT(*count >= 0);
	*weight = sample_weight(usable, rate);
	/* stacks.h: a sampled block counts for at least its own bytes */
	MT_ASSERT(*weight >= usable);
	return 1;
}

void sample_take(void *p, size_t usable, uintptr_t ra)
{
	uint64_t weight;
	if (sample_due(usable, &weight))
		sites_note_sample(p, usable, weight, ra);
}

void sample_note_alloc(void *p, size_t usable, uintptr_t ra)
{
	if (MT_UNLIKELY(sample_count_any(usable)))
		sample_take(p, usable, ra);
}

void sample_take_map(void *p, size_t len, uintptr_t ra)
{
	uint64_t weight;
	if (sample_due(len, &weight))
		sites_note_map(p, len, weight, ra);
}

void sample_start(uint64_t rate)
{
	if (rate > (uint64_t)INT64_MAX / 4)
		rate = (uint64_t)INT64_MAX / 4;
	sample_tls_left = 0;
	sample_st_left = 0;
	sample_tls_rng = 0;
	__atomic_store_n(&sample_interval, rate, __ATOMIC_RELAXED);
}

uint64_t sample_rate(void)
{
	return __atomic_load_n(&sample_interval, __ATOMIC_RELAXED);
}

void sample_fork_child(void)
{
	if (sample_tls_rng)
		sample_tls_rng = sample_seed();
}
