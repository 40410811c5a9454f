// SPDX-License-Identifier: MIT
/*
 * lib/safeopen.c's rules: regular files only, the size bound, and a
 * process's own access (the mode bits of the file and of every directory
 * walked, as the kernel judges a uid, gid and groups), symlinks followed
 * inside the root and judged at their target. Needs root (files of other
 * owners); skipped, saying so, otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safeopen.h"
#include "unit.h"

static char dir[64];
static int rootfd;

static void make(const char *name, mode_t mode, uid_t uid, gid_t gid,
		 const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	if (text)
		CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	CHECK(fchown(fd, uid, gid) == 0 && fchmod(fd, mode) == 0);
	close(fd);
}

/* Opens name inside dir (as the root) under r: 1 opened, 0 refused
 * with errno e. */
static int opens(const char *name, const struct safeopen_rules *r, int *e)
{
	struct stat st;
	int fd = safeopen_in_root(rootfd, name, r, &st);
	*e = errno;
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

int main(void)
{
	int e;
	if (geteuid() != 0) {
		/* TAP's skip: files of other owners are made by root */
		printf("1..0 # SKIP not root\n");
		return 0;
	}
	snprintf(dir, sizeof(dir), "/tmp/cpa-safeopen.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	chmod(dir, 0755);
	rootfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char sub[128];
	snprintf(sub, sizeof(sub), "%s/private", dir);
	CHECK(mkdir(sub, 0700) == 0);

	make("mine", 0600, 1000, 1000, "x\n");
	make("group", 0640, 0, 2000, "x\n");
	make("world", 0644, 0, 0, "x\n");
	make("rootonly", 0600, 0, 0, "x\n");
	make("private/open", 0644, 0, 0, "x\n");
	make("big", 0644, 0, 0, "0123456789");
	char fifo[128];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	CHECK(mkfifo(fifo, 0666) == 0);
	char lnk[128];
	snprintf(lnk, sizeof(lnk), "%s/to-rootonly", dir);
	CHECK(symlink("/rootonly", lnk) == 0);
	snprintf(lnk, sizeof(lnk), "%s/to-world", dir);
	CHECK(symlink("/world", lnk) == 0);
	snprintf(lnk, sizeof(lnk), "%s/to-private", dir);
	CHECK(symlink("private/open", lnk) == 0);

	struct safeopen_cred u1000 = { .uid = 1000, .gid = 1000 };
	struct safeopen_cred in2000 = { .uid = 1001, .gid = 1001, .ngroups = 1,
					.groups = { 2000 } };
	struct safeopen_cred root = { .uid = 0, .gid = 0 };
	struct safeopen_rules as1000 = { .as = &u1000 },
			      as2000 = { .as = &in2000 },
			      asroot = { .as = &root },
			      small = { .max_size = 4 };

	/* without credentials: any regular file, nothing else */
	CHECK(opens("rootonly", NULL, &e) == 1);
	CHECK(opens("fifo", NULL, &e) == 0 && e == EPERM);
	CHECK(opens("big", &small, &e) == 0 && e == EFBIG);
	CHECK(opens("world", &small, &e) == 1);
	/* the owner's bits for the owner, the group's for a member */
	CHECK(opens("mine", &as1000, &e) == 1);
	CHECK(opens("mine", &as2000, &e) == 0 && e == EPERM);
	CHECK(opens("group", &as2000, &e) == 1);
	CHECK(opens("group", &as1000, &e) == 0 && e == EPERM);
	CHECK(opens("world", &as1000, &e) == 1);
	CHECK(opens("rootonly", &as1000, &e) == 0 && e == EPERM);
	CHECK(opens("rootonly", &asroot, &e) == 1);
	/* a directory the process cannot search hides what is in it */
	CHECK(opens("private/open", &as1000, &e) == 0 && e == EACCES);
	CHECK(opens("private/open", NULL, &e) == 1);
	/* symlinks, resolved in the root, judged where they lead */
	CHECK(opens("to-rootonly", &as1000, &e) == 0 && e == EPERM);
	CHECK(opens("to-world", &as1000, &e) == 1);
	CHECK(opens("to-private", &as1000, &e) == 0 && e == EACCES);
	CHECK(opens("to-rootonly", NULL, &e) == 1);

	uint64_t refused[SAFEOPEN_REFUSAL_COUNT];
	safeopen_refusals(refused);
	CHECK(refused[SAFEOPEN_NOT_PERMITTED] == 6);
	CHECK(refused[SAFEOPEN_NOT_REGULAR] == 1);
	CHECK(refused[SAFEOPEN_TOO_BIG] == 1);

	/* a host path of a process that has gone: its owner's own file */
	char path[128];
	struct stat st;
	struct safeopen_rules own = { .own_file = true };
	snprintf(path, sizeof(path), "%s/world", dir);
	int fd = safeopen_host(path, &own, &st);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/to-world", dir);
	CHECK(safeopen_host(path, &own, &st) < 0);
	char hard[128];
	snprintf(path, sizeof(path), "%s/rootonly", dir);
	snprintf(hard, sizeof(hard), "%s/hard", dir);
	CHECK(link(path, hard) == 0);
	CHECK(safeopen_host(hard, &own, &st) < 0);

	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	return unit_done("safeopen_test");
}
