/* SPDX-License-Identifier: MIT */
/*
 * cpa-serve: profiling jobs and history over HTTP.
 *
 * Start-up order is the security model: read the token and the TLS key
 * while still root, ask cpa-capture what the kernel offers, fork the
 * launcher (which keeps the capture's capabilities), then drop every
 * capability before the first HTTP thread exists. The main thread then
 * only waits for the launcher's reports and for a signal to stop.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "auth.h"
#include "capabilities.h"
#include "fleet.h"
#include "http.h"
#include "jobs.h"
#include "launcher.h"
#include "log.h"
#include "nodes.h"
#include "options.h"
#include "opts.h"
#include "privs.h"
#include "run.h"
#include "users.h"

static char *read_pem(const char *path)
{
	struct cpa_buf b = { 0 };
	char chunk[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		cpa_die("%s: %s", path, strerror(errno));
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		if (b.len + (size_t)n > (1u << 20))
			cpa_die("%s: over 1 MiB, not a PEM file", path);
		cpa_buf_add(&b, chunk, (size_t)n);
	}
	close(fd);
	if (n < 0)
		cpa_die("%s: %s", path, strerror(errno));
	cpa_buf_add(&b, "", 1);
	return (char *)b.p;
}

/* Every connection is a descriptor: the soft limit (often 1024) must
 * not be what refuses clients before --max-connections does. */
static void raise_fd_limit(unsigned connections)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < rl.rlim_max)
		rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < connections + 256)
		cpa_warn("%llu open files at most: fewer connections than "
			 "--max-connections %u will be served",
			 (unsigned long long)rl.rlim_cur, connections);
}

/* The state directory belongs to the user the server becomes. */
static void own_state_dir(const char *dir, const char *user)
{
	struct passwd *pw;

	if (!user || geteuid() != 0)
		return;
	pw = getpwnam(user);
	if (!pw)
		cpa_die("--user %s: no such user", user);
	if (mkdir(dir, 0750) && errno != EEXIST)
		cpa_die("%s: %s", dir, strerror(errno));
	if (chown(dir, pw->pw_uid, pw->pw_gid))
		cpa_die("%s: %s", dir, strerror(errno));
}

int main(int argc, char **argv)
{
	struct serve_opts o;
	struct http_config hc;
	char err[512], *caps;
	sigset_t set;
	unsigned port;
	int sock, sfd, status = 0;

	cpa_options_init(argv[0]);
	serve_parse_options(argc, argv, &o);
	raise_fd_limit(o.max_connections);
	if (o.users_file && users_load(o.users_file, err, sizeof(err)))
		cpa_die("%s", err);
	/* the token file is the administrator's: needed unless the users
	 * file names the users */
	if ((o.token_file_given || !o.users_file) &&
	    auth_load_token(o.token_file, err, sizeof(err)))
		cpa_die("%s", err);
	if (!auth_n_users())
		cpa_die("%s: no user in [[Auth.Users]]", o.users_file);

	memset(&hc, 0, sizeof(hc));
	hc.listen = o.listen;
	/* history_answer takes the fleet's URL where it takes the store */
	hc.store_dir = o.clickhouse ? o.clickhouse : o.store_dir;
	hc.max_body = o.max_body;
	hc.threads = o.threads;
	hc.workers = o.fleet ? 4 : 2;
	hc.max_connections = o.max_connections;
	hc.max_per_addr = o.max_per_addr;
	hc.header_timeout_ms = o.header_timeout_s * 1000;
	hc.read_timeout_ms = o.read_timeout_s * 1000;
	hc.child_limits = o.limits.child;
	if (o.tls_cert) {
		hc.tls_cert = read_pem(o.tls_cert);
		hc.tls_key = read_pem(o.tls_key);
	}
	/* the apiserver captures nothing: no probe, no launcher */
	caps = o.fleet ? cpa_strdup("{}") : capabilities_probe(err, sizeof(err));
	if (!caps)
		cpa_die("%s", err);
	if (o.fleet) {
		struct fleet_config fc = {
			.node_token = auth_agent_token(),
			.poll_ms = o.node_poll_ms,
			.pending_s = o.pending_s,
			.unavailable_s = o.unavailable_s,
			.stop_s = o.limits.stop_timeout_s,
			.grace_s = o.limits.grace_s,
			.call_ms = o.node_timeout_ms,
			.clickhouse = o.clickhouse,
			.max_windows = o.max_query_windows,
		};

		if (o.nodes_file && nodes_load(o.nodes_file, err, sizeof(err)))
			cpa_die("%s", err);
		if (o.node_port)
			nodes_set_port(o.node_port);
		if (!fc.node_token)
			cpa_die("--fleet: no token for the nodes ([Agent.Auth] "
				"BearerToken in --users, or an administrator's)");
		fleet_init(&fc);
	}
	{
		struct api_config ac = { .store_dir = hc.store_dir,
					 .features = caps,
					 .child = o.limits.child,
					 .workers = hc.workers,
					 .fleet = o.fleet };

		api_configure(&ac);
	}

	/* the launcher's reports and stop signals come to this thread
	 * only; every thread started later inherits the mask */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		cpa_die("signalfd: %s", strerror(errno));
	sock = o.fleet ? -1 : launcher_start(run_tool("cpa-supervise"),
					     o.limits.max_job, o.limits.grace_s);
	if (sock < 0 && !o.fleet)
		cpa_die("cannot start the job launcher: %s", strerror(errno));
	own_state_dir(o.state_dir, o.user);
	if (privs_drop(o.user, err, sizeof(err)))
		cpa_die("%s", err);
	if (jobs_init(o.state_dir, sock, &o.limits, err, sizeof(err)))
		cpa_die("%s", err);
	jobs_sweep();
	if (http_start(&hc, &port, err, sizeof(err)))
		cpa_die("%s", err);
	cpa_err("serving on %s (port %u)%s%s", o.listen, port,
		o.tls_cert ? " with TLS" : "",
		o.fleet ? " as the fleet's apiserver" : "");

	for (;;) {
		/* poll ignores a negative descriptor: the apiserver's */
		struct pollfd pf[2] = { { sock, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		struct launch_msg m;
		int rc;

		/* retention is swept hourly, and after each job's end */
		rc = poll(pf, 2, 3600 * 1000);
		if (rc == 0) {
			jobs_sweep();
			continue;
		}
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			cpa_err("poll: %s", strerror(errno));
			status = CPA_EXIT_FAILURE;
			break;
		}
		if (pf[1].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				cpa_err("stopping on signal %u", si.ssi_signo);
			break;
		}
		if (pf[0].revents) {
			rc = launcher_recv(sock, &m);
			if (rc <= 0) {
				cpa_err("the job launcher ended");
				status = CPA_EXIT_FAILURE;
				break;
			}
			jobs_on_launcher(&m);
			jobs_sweep();
		}
	}
	jobs_close();
	http_stop();
	if (o.fleet)
		fleet_stop();	/* node Operations go on without it */
	/* the launcher sees the socket close and stops running jobs; their
	 * records stay running, and the next start marks them lost */
	if (sock >= 0)
		close(sock);
	close(sfd);
	jobs_free();
	nodes_free();
	auth_free();
	free(caps);
	free(hc.tls_cert);
	free(hc.tls_key);
	return status;
}
