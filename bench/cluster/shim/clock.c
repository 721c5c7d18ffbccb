/*
 * lockbench's clock shim: preloaded (LD_PRELOAD) into every managed server, it shifts the
 * wall clock the server reads through the C library by an offset another process sets.
 *
 * The offset lives in a small file (LOCKBENCH_CLOCK_FILE) mapped shared: the chaos
 * controller stores a signed number of nanoseconds at byte 0, and the shim counts at byte 8
 * every clock read it shifted, which is how a fault is seen to take effect inside the server
 * rather than merely requested. A drift is a rate in parts per million at byte 16, counted
 * from the true wall-clock time at byte 24: the clock gains (or loses) that much of every
 * second since then, on top of the shift. The rate is written after its start and read before
 * it, so a reader that sees a rate sees its start. CLOCK_REALTIME (and its coarse variant), gettimeofday and
 * time are shifted; the monotonic clocks are left as they are, as a jump of a machine's clock
 * leaves them. A process that reads the kernel's clock without the C library (a Go runtime)
 * is not shifted, and its count stays at zero.
 *
 * Why not libfaketime: its start-up reads configuration through stdio, which allocates, and
 * Redis's allocator reads the clock while it starts, so the two recurse. This shim allocates
 * nothing: getenv, open, mmap and dlsym only, once.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct shared_clock {
    int64_t shift_ns;
    uint64_t shifted_reads;
    int64_t drift_ppm;
    int64_t drift_since_ns;
};

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);

static struct shared_clock *shared;
static clock_gettime_fn real_clock_gettime;
static gettimeofday_fn real_gettimeofday;
static int ready;

static void set_up(void)
{
    if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&real_clock_gettime,
                     (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime"), __ATOMIC_RELEASE);
    __atomic_store_n(&real_gettimeofday,
                     (gettimeofday_fn)dlsym(RTLD_NEXT, "gettimeofday"), __ATOMIC_RELEASE);
    const char *path = getenv("LOCKBENCH_CLOCK_FILE");
    if (path != NULL && path[0] != '\0') {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            void *p = mmap(NULL, sizeof(struct shared_clock), PROT_READ | PROT_WRITE,
                           MAP_SHARED, fd, 0);
            close(fd);
            if (p != MAP_FAILED)
                __atomic_store_n(&shared, (struct shared_clock *)p, __ATOMIC_RELEASE);
        }
    }
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void on_load(void)
{
    set_up();
}

/* The offset at true wall-clock time `real_ns` (0 without a file), counting the read when
 * there is one. */
static int64_t offset_ns(int64_t real_ns)
{
    set_up();
    struct shared_clock *s = __atomic_load_n(&shared, __ATOMIC_ACQUIRE);
    if (s == NULL)
        return 0;
    int64_t ppm = __atomic_load_n(&s->drift_ppm, __ATOMIC_ACQUIRE);
    int64_t ns = __atomic_load_n(&s->shift_ns, __ATOMIC_RELAXED);
    if (ppm != 0) {
        int64_t since = __atomic_load_n(&s->drift_since_ns, __ATOMIC_RELAXED);
        ns += (int64_t)((__int128)(real_ns - since) * ppm / 1000000);
    }
    if (ns != 0)
        __atomic_fetch_add(&s->shifted_reads, 1, __ATOMIC_RELAXED);
    return ns;
}

static int raw_clock_gettime(clockid_t id, struct timespec *ts)
{
    set_up();
    clock_gettime_fn f = __atomic_load_n(&real_clock_gettime, __ATOMIC_ACQUIRE);
    if (f != NULL)
        return f(id, ts);
    return (int)syscall(SYS_clock_gettime, id, ts);
}

static void shift_timespec(struct timespec *ts, int64_t ns)
{
    int64_t total = (int64_t)ts->tv_nsec + ns % 1000000000LL;
    int64_t secs = (int64_t)ts->tv_sec + ns / 1000000000LL;
    if (total < 0) {
        total += 1000000000LL;
        secs -= 1;
    } else if (total >= 1000000000LL) {
        total -= 1000000000LL;
        secs += 1;
    }
    ts->tv_sec = (time_t)secs;
    ts->tv_nsec = (long)total;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    int r = raw_clock_gettime(id, ts);
    if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        int64_t ns = offset_ns((int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec);
        if (ns != 0)
            shift_timespec(ts, ns);
    }
    return r;
}

int gettimeofday(struct timeval *tv, void *tz)
{
    set_up();
    gettimeofday_fn f = __atomic_load_n(&real_gettimeofday, __ATOMIC_ACQUIRE);
    int r;
    if (f != NULL) {
        r = f(tv, tz);
    } else {
        r = (int)syscall(SYS_gettimeofday, tv, tz);
    }
    /* Declared non-null, yet the kernel accepts a null one: checked through a copy the
     * compiler cannot reason away. */
    struct timeval *volatile out = tv;
    if (r == 0 && out != NULL) {
        int64_t ns = offset_ns((int64_t)out->tv_sec * 1000000000LL + (int64_t)out->tv_usec * 1000);
        if (ns != 0) {
            struct timespec ts = {tv->tv_sec, (long)tv->tv_usec * 1000};
            shift_timespec(&ts, ns);
            tv->tv_sec = ts.tv_sec;
            tv->tv_usec = ts.tv_nsec / 1000;
        }
    }
    return r;
}

time_t time(time_t *out)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (out != NULL)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
