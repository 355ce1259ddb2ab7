/*
 * clockshim: an LD_PRELOAD library that moves one process's clocks.
 *
 * Build:  gcc -shared -fPIC -O2 -o clockshim.so clockshim.c
 * Use:    LD_PRELOAD=clockshim.so LOCKPICK_CLOCK_FILE=/path/clock redis-server ...
 *
 * It replaces clock_gettime, gettimeofday and time. Each reads the real clock
 * with the raw syscall (never the vDSO and never libc's own clock functions,
 * so there is no recursion and no allocation: Debian's libfaketime deadlocks
 * inside jemalloc for exactly that reason) and maps it through the
 * parameters in LOCKPICK_CLOCK_FILE, a small file mapped read-only and shared
 * with the controlling process (lockpick's cluster.Clock), which rewrites it
 * while the process runs:
 *
 *   fake_realtime  = rt_fake   + (real_realtime  - rt_real)   * rate
 *   fake_monotonic = mono_fake + (real_monotonic - mono_real) * rate
 *
 * CLOCK_REALTIME(_COARSE), gettimeofday and time follow the first line (Redis
 * key expiry and TIME use gettimeofday); CLOCK_MONOTONIC(_COARSE) the second,
 * so a jump moves only the wall clock while a rate makes the whole clock fast
 * or slow. Other clocks pass through. Without the variable, or with a file
 * that is missing, short or has the wrong magic, every call passes through.
 *
 * The file layout (little-endian, 8-byte fields) must match cluster/clock.go:
 *   0 magic "LPCLOCK1"   8 seq (odd while being written: a seqlock)
 *  16 rt_real  24 rt_fake  32 mono_real  40 mono_fake  (nanoseconds)
 *  48 rate in parts per billion (1000000000 = true rate)
 */
#define _GNU_SOURCE
#define gettimeofday lockpick_hidden_gettimeofday
#define clock_gettime lockpick_hidden_clock_gettime
#define time lockpick_hidden_time
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#undef gettimeofday
#undef clock_gettime
#undef time

#define LP_MAGIC 0x314b434f4c43504cULL /* "LPCLOCK1" read as little-endian */
#define LP_NSEC 1000000000LL

struct lp_clock {
	uint64_t magic;
	uint64_t seq;
	int64_t rt_real, rt_fake;
	int64_t mono_real, mono_fake;
	int64_t rate_ppb;
};

enum { LP_PASS, LP_REALTIME, LP_MONOTONIC };

static const struct lp_clock *lp_map;
static int lp_state; /* 0 unmapped, 1 mapping, 2 done (lp_map may be NULL) */

/* lp_get maps the clock file on first use. A caller that races the mapping
 * thread gets NULL and the true time, which is what the clock was anyway. */
static const struct lp_clock *lp_get(void)
{
	int state = __atomic_load_n(&lp_state, __ATOMIC_ACQUIRE);
	if (state == 2)
		return lp_map;
	int expected = 0;
	if (!__atomic_compare_exchange_n(&lp_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return expected == 2 ? lp_map : NULL;

	const struct lp_clock *m = NULL;
	const char *path = getenv("LOCKPICK_CLOCK_FILE");
	if (path != NULL && *path != '\0') {
		int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			struct stat st;
			if (syscall(SYS_fstat, fd, &st) == 0 &&
			    st.st_size >= (off_t)sizeof(struct lp_clock)) {
				void *p = mmap(NULL, sizeof(struct lp_clock), PROT_READ, MAP_SHARED,
					       fd, 0);
				if (p != MAP_FAILED)
					m = p;
			}
			syscall(SYS_close, fd);
		}
	}
	lp_map = m;
	__atomic_store_n(&lp_state, 2, __ATOMIC_RELEASE);
	return m;
}

static int64_t lp_scale(int64_t elapsed, int64_t rate_ppb)
{
	if (rate_ppb == LP_NSEC)
		return elapsed;
	return (int64_t)(((__int128)elapsed * rate_ppb) / LP_NSEC);
}

/* lp_adjust maps a true reading of a clock of the given kind to the fake one. */
static int64_t lp_adjust(int kind, int64_t ns)
{
	const struct lp_clock *m = lp_get();
	if (m == NULL || __atomic_load_n(&m->magic, __ATOMIC_RELAXED) != LP_MAGIC)
		return ns;
	for (int spin = 0; spin < 100000; spin++) {
		uint64_t s1 = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		int64_t real, fake;
		if (kind == LP_REALTIME) {
			real = __atomic_load_n(&m->rt_real, __ATOMIC_RELAXED);
			fake = __atomic_load_n(&m->rt_fake, __ATOMIC_RELAXED);
		} else {
			real = __atomic_load_n(&m->mono_real, __ATOMIC_RELAXED);
			fake = __atomic_load_n(&m->mono_fake, __ATOMIC_RELAXED);
		}
		int64_t rate = __atomic_load_n(&m->rate_ppb, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&m->seq, __ATOMIC_RELAXED) != s1)
			continue;
		if (rate <= 0)
			return ns;
		return fake + lp_scale(ns - real, rate);
	}
	return ns; /* a writer died mid-update: fall back to the true time */
}

static int lp_kind(clockid_t id)
{
	switch (id) {
	case CLOCK_REALTIME:
	case CLOCK_REALTIME_COARSE:
		return LP_REALTIME;
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_COARSE:
		return LP_MONOTONIC;
	default:
		return LP_PASS;
	}
}

static int64_t lp_realtime_ns(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
	return lp_adjust(LP_REALTIME, (int64_t)ts.tv_sec * LP_NSEC + ts.tv_nsec);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	long r = syscall(SYS_clock_gettime, id, ts);
	int kind = lp_kind(id);
	if (r != 0 || kind == LP_PASS)
		return (int)r;
	int64_t ns = lp_adjust(kind, (int64_t)ts->tv_sec * LP_NSEC + ts->tv_nsec);
	ts->tv_sec = (time_t)(ns / LP_NSEC);
	ts->tv_nsec = (long)(ns % LP_NSEC);
	if (ts->tv_nsec < 0) {
		ts->tv_sec--;
		ts->tv_nsec += LP_NSEC;
	}
	return 0;
}

int gettimeofday(struct timeval *tv, void *tz)
{
	if (tz != NULL) {
		struct timezone *z = tz;
		z->tz_minuteswest = 0;
		z->tz_dsttime = 0;
	}
	if (tv != NULL) {
		int64_t us = lp_realtime_ns() / 1000;
		tv->tv_sec = (time_t)(us / 1000000);
		tv->tv_usec = (suseconds_t)(us % 1000000);
		if (tv->tv_usec < 0) {
			tv->tv_sec--;
			tv->tv_usec += 1000000;
		}
	}
	return 0;
}

time_t time(time_t *t)
{
	int64_t ns = lp_realtime_ns();
	time_t s = (time_t)(ns / LP_NSEC);
	if (ns < 0 && ns % LP_NSEC != 0)
		s--;
	if (t != NULL)
		*t = s;
	return s;
}
