/* SPDX-License-Identifier: MIT */
/*
 * Dropping privileges for good. The server parses untrusted input from
 * the network, so it must hold nothing a bug there could use: no BPF, no
 * ptrace, no file access beyond its own user's. The launcher, forked
 * before this, is what keeps the capture's capabilities.
 */
#include <config.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/securebits.h>

#include "log.h"
#include "privs.h"

static int clear_caps(char *err, size_t errlen)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d))
		return cpa_fail_errno(err, errlen, errno, "capset");
	return 0;
}

int privs_drop(const char *user, char *err, size_t errlen)
{
	if (geteuid() != 0)
		return 0;
	for (int cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno == EINVAL)
			break;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (user) {
		struct passwd *pw = getpwnam(user);

		if (!pw)
			return cpa_fail(err, errlen, "--user %s: no such user",
					user);
		if (initgroups(user, pw->pw_gid) || setgid(pw->pw_gid) ||
		    setuid(pw->pw_uid))
			return cpa_fail_errno(err, errlen, errno,
					      "--user %s", user);
	} else {
		/* uid 0 without capabilities: exec must not grant root's
		 * set back, nor may a setuid fixup */
		if (prctl(PR_SET_SECUREBITS,
			  SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
			  SECBIT_NO_SETUID_FIXUP |
			  SECBIT_NO_SETUID_FIXUP_LOCKED |
			  SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0))
			return cpa_fail_errno(err, errlen, errno,
					      "securebits");
		if (clear_caps(err, errlen))
			return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return cpa_fail_errno(err, errlen, errno, "no_new_privs");
	return 0;
}
