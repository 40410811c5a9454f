// SPDX-License-Identifier: MIT
/* Opening a process's files without trusting them (safeopen.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "safeopen.h"

#define MAX_SYMLINKS 40		/* as the kernel's own path walk */

static uint64_t refused[SAFEOPEN_REFUSAL_COUNT];

static const char *const refusal_names[SAFEOPEN_REFUSAL_COUNT] = {
	[SAFEOPEN_NOT_REGULAR] = "not-regular",
	[SAFEOPEN_WRONG_FILE] = "not-the-mapped-file",
	[SAFEOPEN_UNVERIFIED] = "unverified-host-path",
	[SAFEOPEN_TOO_BIG] = "too-big",
	[SAFEOPEN_NOT_PERMITTED] = "not-readable-by-process",
};

const char *safeopen_refusal_name(unsigned why)
{
	return why < SAFEOPEN_REFUSAL_COUNT ? refusal_names[why] : "unknown";
}

void safeopen_count(enum safeopen_refusal why)
{
	/* the loader and the sample path both open files */
	__atomic_fetch_add(&refused[why], 1, __ATOMIC_RELAXED);
}

void safeopen_refusals(uint64_t out[SAFEOPEN_REFUSAL_COUNT])
{
	for (unsigned i = 0; i < SAFEOPEN_REFUSAL_COUNT; i++)
		out[i] = __atomic_load_n(&refused[i], __ATOMIC_RELAXED);
}

int safeopen_proc_root(uint32_t pid)
{
	char path[32];
	if (pid == 0) {
		errno = ESRCH;
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int safeopen_cred_from(const struct cpa_proc_status *st,
		       struct safeopen_cred *c)
{
	memset(c, 0, sizeof(*c));
	if (!st->have_ids) {
		errno = ESRCH;	/* a zombie shows no ids */
		return -1;
	}
	c->uid = st->fsuid;
	c->gid = st->fsgid;
	c->ngroups = st->ngroups;
	for (unsigned i = 0; i < st->ngroups; i++)
		c->groups[i] = st->groups[i];
	return 0;
}

int safeopen_cred_of(uint32_t pid, struct safeopen_cred *c)
{
	struct cpa_proc_status st;
	memset(c, 0, sizeof(*c));
	if (!cpa_proc_status(pid, &st))
		return -1;
	return safeopen_cred_from(&st, c);
}

static bool in_groups(const struct safeopen_cred *c, gid_t g)
{
	if (c->gid == g)
		return true;
	for (unsigned i = 0; i < c->ngroups; i++)
		if (c->groups[i] == g)
			return true;
	return false;
}

/*
 * Whether the kernel would grant c the access bit (4 read, 1 search) on
 * a file of st, by its mode: the owner's bits for its owner, else the
 * group's for a member, else the others'. Root (as this namespace sees
 * the process) is granted everything, as CAP_DAC_OVERRIDE would.
 */
static bool cred_may(const struct safeopen_cred *c, const struct stat *st,
		     unsigned bit)
{
	unsigned mode = st->st_mode;
	if (c->uid == 0)
		return true;
	if (st->st_uid == c->uid)
		return mode & (bit << 6);
	if (in_groups(c, st->st_gid))
		return mode & (bit << 3);
	return mode & bit;
}

/*
 * A POSIX ACL can deny a user what the mode bits give the others; its
 * entries are not read here, so a file with one is taken as readable by
 * its owner alone.
 */
static bool has_acl(int pathfd)
{
	char self[40];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	return getxattr(self, "system.posix_acl_access", NULL, 0) > 0;
}

static int refuse(enum safeopen_refusal why, int e)
{
	safeopen_count(why);
	errno = e;
	return -1;
}

/* The rules on the file pst of pathfd; 0 or -1 with errno, counted. */
static int check_rules(int pathfd, const struct stat *pst,
		       const struct safeopen_rules *r)
{
	if (!S_ISREG(pst->st_mode))
		return refuse(SAFEOPEN_NOT_REGULAR, EPERM);
	if (!r)
		return 0;
	if (r->ino && (uint64_t)pst->st_ino != r->ino)
		return refuse(SAFEOPEN_WRONG_FILE, EPERM);
	if (r->max_size && (uint64_t)pst->st_size > r->max_size)
		return refuse(SAFEOPEN_TOO_BIG, EFBIG);
	if (r->as && (!cred_may(r->as, pst, 4) ||
		      (r->as->uid && pst->st_uid != r->as->uid &&
		       has_acl(pathfd))))
		return refuse(SAFEOPEN_NOT_PERMITTED, EPERM);
	if (r->own_file && (pst->st_nlink != 1 || !(pst->st_mode & S_IRUSR)))
		return refuse(SAFEOPEN_NOT_PERMITTED, EPERM);
	return 0;
}

/*
 * The file behind an O_PATH descriptor, opened for reading when it is a
 * regular file that passes the rules. Reopening through /proc/self/fd
 * opens the very inode the descriptor holds, whatever the path now names.
 */
static int open_checked(int pathfd, const struct safeopen_rules *rules,
			struct stat *st)
{
	struct stat pst;
	if (fstat(pathfd, &pst) < 0 || check_rules(pathfd, &pst, rules) < 0)
		goto fail;
	char self[40];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	int fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	if (fstat(fd, st) < 0 || st->st_dev != pst.st_dev ||
	    st->st_ino != pst.st_ino || !S_ISREG(st->st_mode) ||
	    (rules && rules->max_size &&
	     (uint64_t)st->st_size > rules->max_size)) {
		close(fd);
		errno = EPERM;
		goto fail;
	}
	close(pathfd);
	return fd;
fail:;
	int e = errno;
	close(pathfd);
	errno = e;
	return -1;
}

static bool force_walk(void)
{
	static int forced = -1;
	if (forced < 0) {
		const char *v = getenv("CPA_UNWIND_RESOLVE_WALK");
		forced = v && *v && strcmp(v, "0");
	}
	return forced;
}

/* openat2 where the kernel has it (5.6); -1 with ENOSYS where not. */
static int resolve_openat2(int rootfd, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
}

static bool same_dir(int a, const struct stat *b)
{
	struct stat sa;
	return fstat(a, &sa) == 0 && sa.st_dev == b->st_dev &&
	       sa.st_ino == b->st_ino;
}

/*
 * The same resolution by hand, one component at a time, each opened
 * O_PATH|O_NOFOLLOW: a symlink's text is read and walked again from the
 * root when absolute, from the current directory when relative; ".." at
 * the root stays there. Magic links (/proc/self/...) are read as text
 * too, so they cannot lead out either. With cred, every directory looked
 * into must be searchable by it (the file's own mode is check_rules').
 */
static int resolve_walk(int rootfd, const char *path,
			const struct safeopen_cred *cred)
{
	struct stat root_st, cur_st;
	if (fstat(rootfd, &root_st) < 0)
		return -1;
	cur_st = root_st;
	/* rest holds what is left to walk; room for one symlink's text
	 * in front of the remainder */
	char *rest = malloc(2 * PATH_MAX + 2), *link = malloc(PATH_MAX);
	int cur = -1, links = 0;
	if (!rest || !link)
		goto nomem;
	if (strlen(path) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	strcpy(rest, path);
	cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	if (cur < 0)
		goto fail;
	char *p = rest;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char comp[NAME_MAX + 1];
		if (len > NAME_MAX) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		memcpy(comp, p, len);
		comp[len] = '\0';
		p += len;
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..") && same_dir(cur, &root_st))
			continue;
		if (cred && !cred_may(cred, &cur_st, 1)) {
			refuse(SAFEOPEN_NOT_PERMITTED, EACCES);
			goto fail;
		}
		int next = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			goto fail;
		struct stat st;
		if (fstat(next, &st) < 0) {
			close(next);
			goto fail;
		}
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlinkat(next, "", link, PATH_MAX - 1);
			close(next);
			if (n <= 0 || ++links > MAX_SYMLINKS) {
				errno = n <= 0 ? EINVAL : ELOOP;
				goto fail;
			}
			/* the link's text, then what followed it */
			size_t tail = strlen(p);
			if ((size_t)n + 1 + tail >= 2 * PATH_MAX) {
				errno = ENAMETOOLONG;
				goto fail;
			}
			/* "a/b" + "/rest", or "a/b" alone: a slash added
			 * after the last component would ask for a directory */
			size_t sep = tail ? 1 : 0;
			memmove(rest + n + sep, p, tail + 1);
			memcpy(rest, link, (size_t)n);
			if (sep)
				rest[n] = '/';
			p = rest;
			if (link[0] == '/') {
				close(cur);
				cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
				if (cur < 0)
					goto fail;
				cur_st = root_st;
			}
			continue;
		}
		close(cur);
		cur = next;
		cur_st = st;
		if (*p && !S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			goto fail;
		}
	}
	free(rest);
	free(link);
	return cur;
nomem:
	errno = ENOMEM;
fail:;
	int e = errno;
	if (cur >= 0)
		close(cur);
	free(rest);
	free(link);
	errno = e;
	return -1;
}

int safeopen_in_root(int rootfd, const char *path,
		     const struct safeopen_rules *rules, struct stat *st)
{
	int pathfd = -1;
	const struct safeopen_cred *cred = rules ? rules->as : NULL;
	/* openat2 cannot say which directories it went through: judged by
	 * a process's access, the path is walked by hand */
	if (!cred && !force_walk()) {
		pathfd = resolve_openat2(rootfd, path);
		if (pathfd < 0 && errno != ENOSYS)
			return -1;
	}
	if (pathfd < 0)
		pathfd = resolve_walk(rootfd, path, cred);
	if (pathfd < 0)
		return -1;
	return open_checked(pathfd, rules, st);
}

int safeopen_host(const char *path, const struct safeopen_rules *rules,
		  struct stat *st)
{
	int pathfd;
	if (rules && rules->as) {
		/* a host path judged by a process's access: walked from / */
		int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return -1;
		pathfd = resolve_walk(root, path, rules->as);
		close(root);
	} else {
		int nofollow = rules && rules->own_file ? O_NOFOLLOW : 0;
		pathfd = open(path, O_PATH | O_CLOEXEC | nofollow);
	}
	if (pathfd < 0)
		return -1;
	return open_checked(pathfd, rules, st);
}

/*
 * Paths in /proc/PID/maps (which cpa-capture reads for the processes
 * running at its start) are written from the reader's side: a process
 * chrooted to /srv/jail shows /srv/jail/bin/x, where its own side-band
 * records say /bin/x. Both name a file inside the root; the prefix that
 * /proc/PID/root reads as is taken off before resolving there again.
 */
static const char *inside_root(uint32_t pid, const char *path, char *buf,
			       size_t len)
{
	char link[40];
	snprintf(link, sizeof(link), "/proc/%u/root", pid);
	ssize_t n = readlink(link, buf, len - 1);
	if (n <= 1 || (size_t)n >= len - 1)
		return NULL;
	buf[n] = '\0';
	size_t plen = (size_t)n;
	if (strncmp(path, buf, plen) || path[plen] != '/')
		return NULL;
	return path + plen;
}

int safeopen_in_proc_root(uint32_t pid, const char *path,
			  const struct safeopen_rules *rules, struct stat *st,
			  int *rootfd)
{
	*rootfd = safeopen_proc_root(pid);
	if (*rootfd < 0)
		return -1;
	int fd = safeopen_in_root(*rootfd, path, rules, st);
	if (fd < 0 && errno == ENOENT) {
		char buf[PATH_MAX];
		const char *rest = inside_root(pid, path, buf, sizeof(buf));
		if (rest)
			fd = safeopen_in_root(*rootfd, rest, rules, st);
	}
	if (fd < 0) {
		int e = errno;
		close(*rootfd);
		*rootfd = -1;
		errno = e;
	}
	return fd;
}
