/* SPDX-License-Identifier: MIT */
/*
 * The loop: start the chains, wait on one signalfd for their ends and for
 * SIGINT/SIGTERM/SIGHUP, look at the stages every --stats-interval, and
 * decide. One thread, no handlers: every decision is made here, in order.
 *
 * A chain stops by SIGINT to its first stage, which ends its stream with
 * an end record; the others end when their input does, so the last
 * window is stored and a profile is written whole. A stage that has not
 * ended 10 s after a stop is killed. Two stops give the others longer to
 * drain what was captured: a run --once stopped by a signal (60 s), and a
 * run whose first stage ended at its --duration (until --grace past it,
 * when what still runs is stopped, and the run counted as overrun).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "outfile.h"
#include "supervise.h"
#include "clock.h"
#include "timeparse.h"

#define STOP_GRACE_NS (10 * CPA_NSEC_PER_SEC)
/* what a chain ending by its duration, or a run --once, may take to
 * drain: a loaded host's unwind may be that far behind its capture */
#define DRAIN_GRACE_NS (60 * CPA_NSEC_PER_SEC)
/* a chain that ran this long before it ended restarts at the first
 * back-off step again */
#define HEALTHY_NS (60 * CPA_NSEC_PER_SEC)
#define BACKOFF_MAX_S 30
/* a stage that ends with status 2 this soon after its start, before its
 * first report, refused its configuration */
#define START_NS (10 * CPA_NSEC_PER_SEC)

static const struct run_opts *opts;
static struct chain *chains;
static size_t n_chains;
static struct cpa_spawn_user service_user;
static bool have_service_user;
static unsigned restarts, hung;
static uint64_t deadline_ns;		/* monotonic; 0: none */
static bool stopping_all;
static int run_status;
static struct cpa_outfile outfile;
static bool have_out;
static bool killed_all;		/* a second signal killed the stages */
static bool overran;		/* stopped --grace past --duration */

/* "cpa: 2026-12-01 21:00:00 message", as the resident agent's log. */
static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	char when[32];
	time_t t = time(NULL);
	va_list ap;

	strftime(when, sizeof(when), "%F %T", localtime(&t));
	fprintf(stderr, "%s: %s ", cpa_progname(), when);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A wait status as a shell prints it: the code, or 128 + the signal. */
static int shell_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

/* ---- the run directory (resident runs) -------------------------------- */

static void mkdir_for(const char *dir, bool for_service)
{
	struct stat sb;

	if (stat(dir, &sb) < 0) {
		char *copy = cpa_strdup(dir);

		for (char *p = copy + 1; *p; p++)
			if (*p == '/') {
				*p = 0;
				mkdir(copy, 0755);
				*p = '/';
			}
		free(copy);
		if (mkdir(dir, 0750) < 0 && errno != EEXIST)
			cpa_die("%s: cannot create: %s", dir, strerror(errno));
		if (for_service &&
		    chown(dir, service_user.uid, service_user.gid) < 0)
			cpa_die("%s: cannot give it to %s: %s", dir, opts->user,
				strerror(errno));
	} else if (for_service && sb.st_uid != service_user.uid) {
		say("warning: %s is not owned by %s; the store stage may not "
		    "write it", dir, opts->user);
	}
}

static bool runs_as_service(const struct stage *st)
{
	return st->user == USER_SERVICE && have_service_user;
}

static void prepare_run_dir(void)
{
	char sub[4200];
	bool service_dir = false;

	mkdir_for(opts->run_dir, false);
	chmod(opts->run_dir, 0750);
	for (size_t c = 0; c < n_chains; c++)
		for (size_t i = 0; i < chains[c].n; i++) {
			struct proc *p = &chains[c].procs[i];

			if (runs_as_service(p->st) && p->st->dir_opt)
				for (size_t a = 0; a < p->n_args; a++)
					if (!strncmp(p->args[a], p->st->dir_opt,
						     strlen(p->st->dir_opt)))
						mkdir_for(p->args[a] +
							  strlen(p->st->dir_opt),
							  true);
			if (!p->st->stats)
				continue;
			/* a stage of the service user writes its
			 * statistics where that user may */
			if (runs_as_service(p->st)) {
				snprintf(sub, sizeof(sub), "%s/%s", opts->run_dir,
					 p->st->name);
				mkdir_for(sub, true);
				chmod(sub, 0750);
				service_dir = true;
				snprintf(p->stats_path, sizeof(p->stats_path),
					 "%s/%s", sub, p->st->stats);
			} else {
				snprintf(p->stats_path, sizeof(p->stats_path),
					 "%s/%s", opts->run_dir, p->st->stats);
			}
		}
	if (service_dir)
		chmod(opts->run_dir, 0755);
}

/* run_dir/stages: each stage's pid and statistics file, the restart
 * counts; read by cpa-supervise --status and by the tests. */
static void write_stages_file(void)
{
	char path[4200], tmp[4300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/stages", opts->run_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	for (size_t c = 0; c < n_chains; c++)
		for (size_t i = 0; i < chains[c].n; i++)
			fprintf(f, "%s=%d\n", chains[c].procs[i].st->name,
				(int)chains[c].procs[i].pid);
	fprintf(f, "restarts=%u\nhung=%u\n", restarts, hung);
	for (size_t c = 0; c < n_chains; c++)
		for (size_t i = 0; i < chains[c].n; i++)
			if (chains[c].procs[i].stats_path[0])
				fprintf(f, "%s.stats=%s\n",
					chains[c].procs[i].st->name,
					chains[c].procs[i].stats_path);
	if (fclose(f) == 0)
		rename(tmp, path);
	else
		unlink(tmp);
}

static void run_file(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", opts->run_dir, name);
}

/* ---- starting and stopping -------------------------------------------- */

/* The stage's argv: the tool, the time left of the run, its arguments,
 * its statistics file. */
static char **stage_argv(const struct proc *p, uint64_t now, bool check)
{
	size_t n = 0, cap = p->n_args + 6;
	char **argv = cpa_calloc(cap, sizeof(char *));
	char buf[4500];

	argv[n++] = cpa_strdup(p->path);
	if (p->st->deadline_opt && deadline_ns) {
		uint64_t left = deadline_ns > now ? deadline_ns - now : 0;

		snprintf(buf, sizeof(buf), "%s%llums", p->st->deadline_opt,
			 (unsigned long long)(left / 1000000 ? left / 1000000
							     : 1));
		argv[n++] = cpa_strdup(buf);
	}
	for (size_t a = 0; a < p->n_args; a++)
		argv[n++] = cpa_strdup(p->args[a]);
	if (p->stats_path[0]) {
		snprintf(buf, sizeof(buf), "--stats-file=%s", p->stats_path);
		argv[n++] = cpa_strdup(buf);
		snprintf(buf, sizeof(buf), "--stats-interval=%s",
			 opts->stats_interval);
		argv[n++] = cpa_strdup(buf);
	}
	if (check)
		argv[n++] = cpa_strdup("--check");
	argv[n] = NULL;
	return argv;
}

static void free_argv(char **argv)
{
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
}

static void spawn_opts(const struct proc *p, struct cpa_spawn *s,
		       int caps[STAGE_MAX_CAPS + 1])
{
	memset(s, 0, sizeof(*s));
	stage_cap_list(p->st, caps);
	s->caps = caps;
	s->user = runs_as_service(p->st) ? &service_user : NULL;
	s->no_new_privs = true;
	s->limits = p->has_limits ? &p->limits : NULL;
	s->fd[0] = s->fd[1] = -1;
	s->fd[2] = STDERR_FILENO;
}

/* Every stage parses its options with --check before any starts: a bad
 * value is one line and exit 2, with nothing started. */
static int preflight(void)
{
	for (size_t c = 0; c < n_chains; c++)
		for (size_t i = 0; i < chains[c].n; i++) {
			struct proc *p = &chains[c].procs[i];
			int caps[STAGE_MAX_CAPS + 1], st = 0;
			struct cpa_spawn s;
			pid_t pid;

			spawn_opts(p, &s, caps);
			s.argv = stage_argv(p, cpa_mono_ns(), true);
			s.path = s.argv[0];
			pid = cpa_spawn(&s);
			if (pid < 0)
				cpa_err("%s: %s", s.path, strerror(errno));
			free_argv((char **)s.argv);
			if (pid < 0)
				return CPA_EXIT_FAILURE;
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			if (st) {
				int code = shell_status(st);

				/* the tool said why, on stderr; a run
				 * --once fails as its stages would */
				if (code == CPA_EXIT_USAGE)
					return opts->once ? CPA_EXIT_FAILURE
							  : CPA_EXIT_USAGE;
				cpa_err("the %s stage cannot start (status %d)",
					p->st->name, code);
				return CPA_EXIT_FAILURE;
			}
		}
	return 0;
}

static void kill_chain(struct chain *ch, int sig)
{
	for (size_t i = 0; i < ch->n; i++)
		if (ch->procs[i].pid > 0)
			kill(ch->procs[i].pid, sig);
}

/* Stops a chain; what still runs grace_ns later is killed (a second stop
 * may bring that time forward, never put it off). */
static void stop_chain(struct chain *ch, bool restart, uint64_t grace_ns)
{
	uint64_t now = cpa_mono_ns();

	if (!ch->running)
		return;
	if (!ch->stopping || now + grace_ns < ch->stop_ns + ch->grace_ns) {
		ch->stopping = true;
		ch->stop_ns = now;
		ch->grace_ns = grace_ns;
	}
	ch->restart = restart;
	if (ch->procs[0].pid > 0)
		kill(ch->procs[0].pid, SIGINT);
}

static void stop_all(int status, uint64_t grace_ns)
{
	if (!run_status)
		run_status = status;	/* a failure stays one */
	stopping_all = true;
	for (size_t c = 0; c < n_chains; c++) {
		stop_chain(&chains[c], false, grace_ns);
		chains[c].restart_at_ns = 0;
	}
}

static int start_chain(struct chain *ch)
{
	int in = -1, fds[2];
	uint64_t now = cpa_mono_ns();
	pid_t pgid = 0;
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (null < 0)
		cpa_die("/dev/null: %s", strerror(errno));
	ch->started_ns = now;
	ch->stopping = ch->restart = false;
	ch->restart_at_ns = 0;
	for (size_t i = 0; i < ch->n; i++) {
		struct proc *p = &ch->procs[i];
		int caps[STAGE_MAX_CAPS + 1], outfd = -1;
		bool last = i + 1 == ch->n;
		struct cpa_spawn s;

		fds[0] = fds[1] = -1;
		if (!last) {
			if (pipe2(fds, O_CLOEXEC))
				cpa_die("pipe: %s", strerror(errno));
			outfd = fds[1];
		} else if (have_out) {
			outfd = outfile.fd;
		} else if (!opts->once) {
			outfd = null;	/* a resident chain's end writes
					 * nowhere */
		} else {
			outfd = STDOUT_FILENO;
		}
		spawn_opts(p, &s, caps);
		s.argv = stage_argv(p, now, false);
		s.path = s.argv[0];
		s.fd[0] = i == 0 ? null : in;
		s.fd[1] = outfd;
		/* its own process group: a terminal's Ctrl-C reaches the
		 * supervisor alone, which stops the chain in order */
		s.pgid = pgid;
		/* should the supervisor die, the chain still ends cleanly */
		s.death_sig = i == 0 ? SIGINT : 0;
		p->pid = cpa_spawn(&s);
		if (p->pid < 0)
			cpa_err("%s: %s", s.path, strerror(errno));
		free_argv((char **)s.argv);
		if (in >= 0)
			close(in);
		if (fds[1] >= 0)
			close(fds[1]);
		in = fds[0];
		if (p->pid < 0) {
			p->pid = 0;
			if (in >= 0)
				close(in);
			close(null);
			ch->running = i > 0;
			if (ch->running)
				stop_chain(ch, false, DRAIN_GRACE_NS);
			return -1;
		}
		if (!pgid)
			pgid = p->pid;
		p->started_ns = now;
		watch_start(&p->watch, now);
	}
	close(null);
	ch->running = true;
	return 0;
}

/* Starts a chain, and in a resident run says so and records its pids. */
static int launch(struct chain *ch)
{
	char line[1024];
	size_t len = 0;

	if (start_chain(ch) < 0) {
		stop_all(CPA_EXIT_FAILURE, STOP_GRACE_NS);
		return -1;
	}
	if (opts->once)
		return 0;
	line[0] = 0;
	for (size_t i = 0; i < ch->n && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len,
					"%s%s %d", i ? ", " : "",
					ch->procs[i].st->name,
					(int)ch->procs[i].pid);
	say("pipeline started (%s)", line);
	write_stages_file();
	return 0;
}

/* ---- ends --------------------------------------------------------------- */

static bool chain_done(const struct chain *ch)
{
	for (size_t i = 0; i < ch->n; i++)
		if (ch->procs[i].pid > 0)
			return false;
	return true;
}

/* A chain whose every stage has ended: restart it, or not. */
static void chain_ended(struct chain *ch)
{
	uint64_t now = cpa_mono_ns();

	ch->running = false;
	if (stopping_all || opts->once || !ch->restart)
		return;
	restarts++;
	if (now - ch->started_ns >= HEALTHY_NS || !ch->backoff_s)
		ch->backoff_s = 1;
	say("restart %u in %us", restarts, ch->backoff_s);
	ch->restart_at_ns = now + ch->backoff_s * CPA_NSEC_PER_SEC;
	ch->backoff_s = ch->backoff_s * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S
							  : ch->backoff_s * 2;
}

static bool at_deadline(uint64_t now)
{
	return deadline_ns && now + CPA_NSEC_PER_SEC >= deadline_ns;
}

/* The deadline stage ended at the deadline: the others drain what it
 * wrote, until --grace past the deadline and the stop after that. */
static void duration_reached(void)
{
	uint64_t now = cpa_mono_ns(), end = deadline_ns + opts->grace_ns +
					       STOP_GRACE_NS;

	if (!stopping_all && !opts->once)
		say("--duration %s reached", opts->duration);
	stop_all(0, end > now ? end - now : 0);
}

/* Stages still running --grace past the deadline: stopped, and the run
 * counted as overrun (--report-fd's timed_out). */
static void overrun(void)
{
	overran = true;
	if (opts->once)
		cpa_err("still running %llus past --duration %s: stopping",
			(unsigned long long)(opts->grace_ns / CPA_NSEC_PER_SEC),
			opts->duration);
	else
		say("still running %llus past --duration %s: stopping",
		    (unsigned long long)(opts->grace_ns / CPA_NSEC_PER_SEC),
		    opts->duration);
	stop_all(0, STOP_GRACE_NS);
}

static void proc_ended(struct chain *ch, struct proc *p, int st)
{
	uint64_t now = cpa_mono_ns();
	int code = shell_status(st);
	bool killed = killed_all && WIFSIGNALED(st);

	p->pid = 0;
	p->status = st;
	if (opts->once) {
		/* every stage's end counts: a profile is written whole or
		 * not at all */
		if (code && !killed) {
			/* a reader that went away (| head) needs no words */
			if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGPIPE)
				cpa_err("%s stage ended with status %d",
					p->st->name, code);
			run_status = CPA_EXIT_FAILURE;
			stop_chain(ch, false, DRAIN_GRACE_NS);
		}
	} else if (ch->stopping || stopping_all) {
		/* asked to stop; a hung stage's end was already told */
	} else if (p->st->deadline_opt && code == 0 && at_deadline(now)) {
		duration_reached();
	} else if (code == CPA_EXIT_USAGE && !p->watch.reported &&
		   now - p->started_ns < START_NS) {
		say("%s stage refused its configuration (status 2); not "
		    "restarting", p->st->name);
		stop_all(CPA_EXIT_USAGE, STOP_GRACE_NS);
	} else if (p->st->restart == RESTART_NEVER) {
		say("%s stage ended (status %d)", p->st->name, code);
		stop_all(code ? CPA_EXIT_FAILURE : 0, STOP_GRACE_NS);
	} else {
		say("%s stage ended (status %d); restarting the pipeline",
		    p->st->name, code);
		/* one stage's end ends its neighbours (EPIPE, EOF): name
		 * each one already gone, so the cause is in the log */
		for (size_t i = 0; i < ch->n; i++) {
			struct proc *o = &ch->procs[i];
			int ost;

			if (o == p || o->pid <= 0 ||
			    waitpid(o->pid, &ost, WNOHANG) != o->pid)
				continue;
			o->pid = 0;
			o->status = ost;
			say("%s stage ended too (status %d)", o->st->name,
			    shell_status(ost));
		}
		stop_chain(ch, true, STOP_GRACE_NS);
	}
	if (chain_done(ch))
		chain_ended(ch);
}

static void reap(void)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		for (size_t c = 0; c < n_chains; c++)
			for (size_t i = 0; i < chains[c].n; i++)
				if (chains[c].procs[i].pid == pid)
					proc_ended(&chains[c],
						   &chains[c].procs[i], st);
}

/* ---- the watchdog ------------------------------------------------------- */

static void watch_chain(struct chain *ch)
{
	uint64_t limit = opts->watchdog * opts->stats_ns, for_ns[16];
	enum verdict v[16];
	long culprit = -1;

	if (!ch->running || ch->stopping || ch->n > 16)
		return;
	for (size_t i = 0; i < ch->n; i++) {
		struct proc *p = &ch->procs[i];

		v[i] = WATCH_OK;
		if (p->pid > 0 && p->stats_path[0])
			v[i] = watch_check(&p->watch, p->pid, p->stats_path,
					   p->st->input == INPUT_PREVIOUS,
					   p->started_ns, limit, &for_ns[i]);
	}
	/* A stage that hangs stalls those upstream of it on a full pipe:
	 * one silent while its output waits unread is held up, not hung.
	 * The culprit is the furthest downstream of the others. */
	for (size_t i = 0; i < ch->n; i++) {
		if (v[i] == WATCH_OK)
			continue;
		if (v[i] == WATCH_SILENT && i + 1 < ch->n &&
		    watch_input_waiting(&ch->procs[i + 1].watch))
			continue;
		culprit = (long)i;
	}
	if (culprit < 0)
		return;
	struct proc *p = &ch->procs[culprit];

	hung++;
	if (v[culprit] == WATCH_SILENT)
		say("%s stage hung: no statistics for %llus (pid %d); "
		    "restarting the pipeline", p->st->name,
		    (unsigned long long)(for_ns[culprit] / CPA_NSEC_PER_SEC),
		    (int)p->pid);
	else
		say("%s stage hung: no samples moved for %llus while its "
		    "input waited (pid %d); restarting the pipeline",
		    p->st->name,
		    (unsigned long long)(for_ns[culprit] / CPA_NSEC_PER_SEC),
		    (int)p->pid);
	kill(p->pid, SIGKILL);
	stop_chain(ch, true, STOP_GRACE_NS);
}

/* ---- metrics ----------------------------------------------------------- */

static void write_metrics(void)
{
	static bool told;

	if (opts->once || !opts->metrics_file)
		return;
	if (metrics_write(opts->metrics_file, chains, n_chains, restarts,
			  hung) < 0) {
		if (!told)
			say("warning: %s: cannot write: %s", opts->metrics_file,
			    strerror(errno));
		told = true;
	} else {
		told = false;
	}
}

/* ---- the loop ----------------------------------------------------------- */

static int signal_fd(void)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		cpa_die("signalfd: %s", strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	return fd;
}

static bool any_running(void)
{
	for (size_t c = 0; c < n_chains; c++)
		if (chains[c].running)
			return true;
	return false;
}

static bool all_done(void)
{
	for (size_t c = 0; c < n_chains; c++)
		if (chains[c].running || chains[c].restart_at_ns)
			return false;
	return true;
}

static uint64_t next_wake(uint64_t now, uint64_t tick)
{
	uint64_t t = tick;

	if (deadline_ns && !overran) {
		uint64_t d = deadline_ns > now ? deadline_ns
					       : deadline_ns + opts->grace_ns;

		if (d < t)
			t = d;
	}
	for (size_t c = 0; c < n_chains; c++) {
		if (chains[c].restart_at_ns && chains[c].restart_at_ns < t)
			t = chains[c].restart_at_ns;
		if (chains[c].stopping && chains[c].running &&
		    chains[c].stop_ns + chains[c].grace_ns < t)
			t = chains[c].stop_ns + chains[c].grace_ns;
	}
	return t > now ? t : now;
}

static void report(void)
{
	if (opts->report_fd < 0)
		return;
	for (size_t c = 0; c < n_chains; c++)
		for (size_t i = 0; i < chains[c].n; i++)
			dprintf(opts->report_fd, "%s %d\n",
				chains[c].procs[i].st->name,
				chains[c].procs[i].status);
	if (overran)
		dprintf(opts->report_fd, "timed_out 1\n");
	close(opts->report_fd);
}

static void finish_output(void)
{
	char err[512];

	if (!have_out)
		return;
	if (run_status) {
		cpa_outfile_abort(&outfile);
		cpa_err("%s not written", opts->output);
	} else if (cpa_outfile_commit(&outfile, err, sizeof(err)) < 0) {
		cpa_err("%s", err);
		run_status = CPA_EXIT_FAILURE;
	} else {
		fprintf(stderr, "%s: wrote %s\n", cpa_progname(), opts->output);
	}
}

int supervise(struct chain *ch, size_t n, const struct run_opts *o)
{
	uint64_t tick, now;
	char pidfile[4200], err[512];
	int sfd, rc;
	unsigned signals = 0;

	opts = o;
	chains = ch;
	n_chains = n;
	if (geteuid() == 0 && o->user &&
	    cpa_spawn_user(o->user, &service_user) == 0)
		have_service_user = true;
	sfd = signal_fd();
	if (o->check && (rc = preflight()))
		return rc;
	now = cpa_mono_ns();
	if (o->duration_ns)
		deadline_ns = now + o->duration_ns;
	if (o->output) {
		if (cpa_outfile_open(&outfile, o->output, 0644, err, sizeof(err)) < 0) {
			cpa_err("%s", err);
			return CPA_EXIT_FAILURE;
		}
		have_out = true;
	}
	if (!o->once) {
		prepare_run_dir();
		run_file("monitor.pid", pidfile, sizeof(pidfile));
		FILE *f = fopen(pidfile, "w");

		if (f) {
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
		}
	}
	for (size_t c = 0; c < n && !stopping_all; c++)
		launch(&ch[c]);
	tick = now + o->stats_ns;
	while (!all_done()) {
		struct pollfd pf = { sfd, POLLIN, 0 };
		struct signalfd_siginfo si;
		uint64_t wake;

		now = cpa_mono_ns();
		wake = next_wake(now, tick);
		if (poll(&pf, 1, (int)((wake - now) / 1000000) + 1) < 0 &&
		    errno != EINTR)
			cpa_die("poll: %s", strerror(errno));
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			/* a second Ctrl-C does not wait for the stages,
			 * and the profile is not written */
			if (signals++ && o->once) {
				killed_all = true;
				run_status = 128 + (int)si.ssi_signo;
				for (size_t c = 0; c < n; c++)
					kill_chain(&ch[c], SIGKILL);
			}
			stop_all(0, o->once ? DRAIN_GRACE_NS : STOP_GRACE_NS);
		}
		reap();
		now = cpa_mono_ns();
		if (deadline_ns && now >= deadline_ns) {
			if (!any_running() && !stopping_all)
				duration_reached();
			else if (any_running() && !overran &&
				 now >= deadline_ns + opts->grace_ns)
				overrun();
		}
		for (size_t c = 0; c < n; c++) {
			struct chain *c_ = &ch[c];

			if (c_->stopping && c_->running &&
			    now >= c_->stop_ns + c_->grace_ns) {
				kill_chain(c_, SIGKILL);
				overran |= deadline_ns && now >= deadline_ns;
			}
			if (c_->restart_at_ns && now >= c_->restart_at_ns) {
				if (at_deadline(now)) {
					c_->restart_at_ns = 0;
					duration_reached();
				} else {
					launch(c_);
				}
			}
		}
		if (now >= tick) {
			if (o->watchdog && !stopping_all)
				for (size_t c = 0; c < n; c++)
					watch_chain(&ch[c]);
			write_metrics();
			tick = now + o->stats_ns;
		}
	}
	close(sfd);
	report();
	finish_output();
	if (!o->once) {
		char stages_path[4200];

		say("stopped");
		run_file("stages", stages_path, sizeof(stages_path));
		unlink(pidfile);
		unlink(stages_path);
		/* its series end with the run */
		if (o->metrics_file)
			unlink(o->metrics_file);
	}
	return run_status;
}
