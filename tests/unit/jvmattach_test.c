// SPDX-License-Identifier: MIT
/*
 * The JVM attach trigger file (lib/runtime/jvmattach.c) against names the JVM's
 * user prepared in its /tmp: a hard link to a root-owned file, a file of
 * another user, a symlink. None may be chowned, written or removed; only
 * a file cpa created is given to the JVM's user and removed again.
 *
 * The hard link is made as nobody where fs.protected_hardlinks is 0 (the
 * kernel's default), as root where it is 1: the state is the same.
 * Needs root (chown); skipped, saying so, otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jvmattach.h"
#include "unit.h"

#define NOBODY 65534

static char dir[64], victim[128], trigger[128];
static pid_t jvm;

static void on_quit(int sig)
{
	(void)sig;
}

/* A process that catches SIGQUIT, as a JVM does. */
static pid_t fake_jvm(void)
{
	signal(SIGQUIT, on_quit);
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

static struct jvm_target target(void)
{
	struct jvm_target t;
	memset(&t, 0, sizeof(t));
	t.pid = t.nspid = (uint32_t)jvm;
	t.uid = NOBODY;
	t.gid = NOBODY;
	t.sigcgt = 1ull << (SIGQUIT - 1);
	t.tmpfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return t;
}

static bool protected_hardlinks(void)
{
	FILE *f = fopen("/proc/sys/fs/protected_hardlinks", "re");
	int v = 1;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 1;
		fclose(f);
	}
	return v != 0;
}

/* link(victim, trigger) as nobody where the kernel allows it. */
static int link_as_nobody(void)
{
	if (protected_hardlinks())
		return link(victim, trigger);
	pid_t pid = fork();
	if (pid == 0)
		_exit(setgid(NOBODY) || setuid(NOBODY) ||
		      link(victim, trigger) ? 1 : 0);
	int status;
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			       WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void test_hard_link_to_root_file(void)
{
	struct stat st;
	char err[256];
	int fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, "secret\n", 7) == 7);
	close(fd);
	CHECK(link_as_nobody() == 0);
	struct jvm_target t = target();
	/* the JVM takes a root-owned trigger: SIGQUIT goes out */
	CHECK(jvm_attach_trigger(&t, err, sizeof(err)) == 0);
	jvm_target_close(&t);
	CHECK(stat(victim, &st) == 0);
	CHECK(st.st_uid == 0);
	CHECK(st.st_gid == 0);
	CHECK((st.st_mode & 07777) == 0600);
	CHECK(st.st_size == 7);
	/* not ours: left where it was */
	CHECK(st.st_nlink == 2);
	unlink(trigger);
	unlink(victim);
}

static void test_other_users_file(void)
{
	struct stat st;
	char err[256];
	int fd = open(trigger, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && fchown(fd, 12345, 12345) == 0);
	close(fd);
	struct jvm_target t = target();
	CHECK(jvm_attach_trigger(&t, err, sizeof(err)) == JVM_ATTACH_REFUSED);
	printf("refused: %s\n", err);
	jvm_target_close(&t);
	CHECK(stat(trigger, &st) == 0 && st.st_uid == 12345);
	unlink(trigger);
}

static void test_symlink(void)
{
	struct stat st;
	char err[256];
	int fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	close(fd);
	CHECK(symlink(victim, trigger) == 0);
	struct jvm_target t = target();
	CHECK(jvm_attach_trigger(&t, err, sizeof(err)) == JVM_ATTACH_REFUSED);
	jvm_target_close(&t);
	CHECK(stat(victim, &st) == 0 && st.st_uid == 0);
	CHECK(lstat(trigger, &st) == 0 && S_ISLNK(st.st_mode));
	unlink(trigger);
	unlink(victim);
}

static void test_ours(void)
{
	struct stat st;
	char err[256];
	struct jvm_target t = target();
	CHECK(jvm_attach_trigger(&t, err, sizeof(err)) == 0);
	/* created new, given to the JVM's user */
	CHECK(stat(trigger, &st) == 0);
	CHECK(st.st_uid == NOBODY && st.st_size == 0 && st.st_nlink == 1);
	/* the JVM's user swaps it for another file: that one stays */
	char other[160];
	snprintf(other, sizeof(other), "%s.other", trigger);
	int fd = open(other, O_WRONLY | O_CREAT | O_EXCL, 0600);
	close(fd);
	CHECK(rename(other, trigger) == 0);
	jvm_target_close(&t);
	CHECK(stat(trigger, &st) == 0);
	unlink(trigger);
	/* ours, untouched: removed on close */
	t = target();
	CHECK(jvm_attach_trigger(&t, err, sizeof(err)) == 0);
	jvm_target_close(&t);
	CHECK(stat(trigger, &st) < 0 && errno == ENOENT);
}

int main(void)
{
	if (geteuid() != 0) {
		/* TAP's skip: the trigger's owner is changed only by root */
		printf("1..0 # SKIP not root\n");
		return 0;
	}
	snprintf(dir, sizeof(dir), "/tmp/cpa-jvmattach.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	/* a shared /tmp: sticky, world-writable */
	chmod(dir, 01777);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	jvm = fake_jvm();
	snprintf(trigger, sizeof(trigger), "%s/.attach_pid%d", dir, (int)jvm);
	test_hard_link_to_root_file();
	test_other_users_file();
	test_symlink();
	test_ours();
	kill(jvm, SIGKILL);
	waitpid(jvm, NULL, 0);
	rmdir(dir);
	return unit_done("jvmattach_test");
}
