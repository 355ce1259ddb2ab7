/*
 * fsyncshim: an LD_PRELOAD library that records what one process made durable.
 *
 * Build:  gcc -shared -fPIC -O2 -o fsyncshim.so fsyncshim.c -ldl
 * Use:    LD_PRELOAD=fsyncshim.so LOCKPICK_FSYNC_JOURNAL=/path/journal redis-server ...
 *
 * A power failure keeps of each file only what was flushed to the disk with
 * fsync or fdatasync; the rest sat in the page cache and is gone. A kill -9
 * loses nothing the kernel has, so it cannot show the difference between
 * appendfsync everysec and always. This library lets lockpick's power-loss
 * fault (cluster/powerloss.go) cut every file back to its durable length.
 *
 * It wraps fsync, fdatasync, rename and renameat and appends one line per
 * successful call to the journal (O_APPEND, one write(2) per line, so lines
 * of concurrent threads never interleave):
 *
 *   S <size> <path>      fsync/fdatasync of <path>; <size> is the file's
 *                        length read before the call, so bytes appended by
 *                        another thread during the sync are not counted
 *   R <old>\t<new>       rename of <old> to <new> (a durable file moves)
 *
 * Paths are absolute (the descriptor's /proc/self/fd link, or the working
 * directory joined with a relative rename argument). Without the variable,
 * or if the journal cannot be opened, every call passes through unrecorded;
 * lockpick checks that the journal exists before it trusts it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int lp_fd = -2; /* -2 not yet opened, -1 no journal */

static int lp_journal(void)
{
	int fd = __atomic_load_n(&lp_fd, __ATOMIC_ACQUIRE);
	if (fd != -2)
		return fd;
	const char *path = getenv("LOCKPICK_FSYNC_JOURNAL");
	int nfd = -1;
	if (path != NULL && *path != '\0')
		nfd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	int expected = -2;
	if (!__atomic_compare_exchange_n(&lp_fd, &expected, nfd, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		if (nfd >= 0)
			close(nfd); /* another thread opened it first */
		return expected;
	}
	return nfd;
}

static void lp_write(const char *line, size_t n)
{
	int fd = lp_journal();
	if (fd < 0)
		return;
	int saved = errno;
	ssize_t w = write(fd, line, n);
	(void)w;
	errno = saved;
}

/* lp_abs writes the absolute form of path into out. */
static int lp_abs(const char *path, char *out, size_t size)
{
	if (path[0] == '/')
		return snprintf(out, size, "%s", path) < (int)size ? 0 : -1;
	char cwd[PATH_MAX];
	if (getcwd(cwd, sizeof cwd) == NULL)
		return -1;
	return snprintf(out, size, "%s/%s", cwd, path) < (int)size ? 0 : -1;
}

static int lp_sync(int fd, int (*real)(int))
{
	struct stat st;
	int have = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	int rc = real(fd);
	if (rc != 0 || !have)
		return rc;
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path - 1);
	if (n <= 0)
		return rc;
	path[n] = '\0';
	char line[PATH_MAX + 64];
	int len = snprintf(line, sizeof line, "S %lld %s\n", (long long)st.st_size, path);
	if (len > 0 && len < (int)sizeof line)
		lp_write(line, (size_t)len);
	return rc;
}

static void lp_renamed(const char *from, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];
	if (lp_abs(from, a, sizeof a) != 0 || lp_abs(to, b, sizeof b) != 0)
		return;
	char line[2 * PATH_MAX + 8];
	int len = snprintf(line, sizeof line, "R %s\t%s\n", a, b);
	if (len > 0 && len < (int)sizeof line)
		lp_write(line, (size_t)len);
}

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);

int fsync(int fd)
{
	if (real_fsync == NULL)
		real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	return lp_sync(fd, real_fsync);
}

int fdatasync(int fd)
{
	if (real_fdatasync == NULL)
		real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	return lp_sync(fd, real_fdatasync);
}

int rename(const char *from, const char *to)
{
	if (real_rename == NULL)
		real_rename = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
	int rc = real_rename(from, to);
	if (rc == 0)
		lp_renamed(from, to);
	return rc;
}

/* renameat is recorded only for paths relative to the working directory. */
int renameat(int fromdir, const char *from, int todir, const char *to)
{
	if (real_renameat == NULL)
		real_renameat = (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
	int rc = real_renameat(fromdir, from, todir, to);
	if (rc == 0 && (from[0] == '/' || fromdir == AT_FDCWD) && (to[0] == '/' || todir == AT_FDCWD))
		lp_renamed(from, to);
	return rc;
}
