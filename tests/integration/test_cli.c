// SPDX-License-Identifier: Apache-2.0
/* What a user sees from the command line when something is wrong: one line, a non-zero exit. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"

TestSuite(cli, .timeout = 60);

static int lines(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

static void expect_one_line_error(char *const argv[], int want_rc, const char *needle)
{
	char *err = NULL;
	int rc = run_cmd(argv, &err);

	cr_assert_eq(rc, want_rc, "exit %d, expected %d: %s", rc, want_rc, err);
	cr_assert(err && strstr(err, needle), "stderr lacks '%s': %s", needle, err);
	/* The error itself, and at most a hint where to look. */
	cr_assert_leq(lines(err), 2, "too chatty: %s", err);
	free(err);
}

Test(cli, a_pid_that_does_not_exist)
{
	char *argv[] = { (char *)bin("rover"),	  "profile", "--pid", "999999999", "--output",
			 "/tmp/rover-cli.folded", NULL };

	expect_one_line_error(argv, 1, "no such process: 999999999");
}

Test(cli, bad_arguments)
{
	char *dur[] = {
		(char *)bin("rover"),	 "profile", "--pid", "1", "--duration", "ten", "--output",
		"/tmp/rover-cli.folded", NULL
	};
	char *period[] = { (char *)bin("rover"),
			   "profile",
			   "--pid",
			   "1",
			   "--dump-period",
			   "500us",
			   "--output",
			   "/tmp/rover-cli.folded",
			   NULL };
	char *pid[] = {
		(char *)bin("rover"), "profile", "--pid", "12,x", "--output", "/tmp/x", NULL
	};
	char *fmt[] = { (char *)bin("rover"), "profile", "--pid", "1", "--format", "png",
			"--output",	      "/tmp/x",	 NULL };
	char *type[] = { (char *)bin("rover"), "profile", "--pid", "1", "--type", "gpu",
			 "--output",	       "/tmp/x",  NULL };
	char *noout[] = { (char *)bin("rover"), "profile", "--pid", "1", NULL };
	char *cmd[] = { (char *)bin("rover"), "frobnicate", NULL };

	expect_one_line_error(dur, 2, "bad --duration 'ten'");
	expect_one_line_error(period, 2, "bad --dump-period '500us'");
	expect_one_line_error(pid, 2, "bad --pid '12,x'");
	expect_one_line_error(fmt, 2, "bad --format 'png'");
	expect_one_line_error(type, 2, "bad --type 'gpu'");
	expect_one_line_error(noout, 2, "needs --output");
	expect_one_line_error(cmd, 2, "unknown command 'frobnicate'");
}

/* --name that matches nothing, or that is no regular expression: said, a non-zero exit. */
Test(cli, a_name_that_matches_nothing)
{
	char *none[] = { (char *)bin("rover"),
			 "profile",
			 "--name",
			 "^no-such-process-[0-9]{12}$",
			 "--output",
			 "/tmp/rover-cli.folded",
			 NULL };
	char *bad[] = { (char *)bin("rover"),	 "profile", "--name", "nginx(", "--output",
			"/tmp/rover-cli.folded", NULL };
	char *empty[] = { (char *)bin("rover"),	   "profile", "--name", "", "--output",
			  "/tmp/rover-cli.folded", NULL };
	char *watch[] = { (char *)bin("rover"),
			  "watch",
			  "--name",
			  "^no-such-process-[0-9]{12}$",
			  "--cpu",
			  "50:1/1",
			  "--output",
			  "/tmp/rover-cli.folded",
			  NULL };
	char *neither[] = { (char *)bin("rover"), "profile", "--output", "/tmp/rover-cli.folded",
			    NULL };

	expect_one_line_error(none, 1, "--name '^no-such-process-[0-9]{12}$' matches no process");
	expect_one_line_error(bad, 2, "bad --name 'nginx(': missing closing parenthesis");
	expect_one_line_error(empty, 2, "bad --name ''");
	expect_one_line_error(watch, 1, "matches no process");
	expect_one_line_error(neither, 2, "needs --pid PID[,PID...] or --name REGEX");
}

/*
 * --name finds a process by its command line and says so, one line; never the command itself
 * (its own arguments hold the regex) nor what it runs under.
 */
Test(cli, a_name_chooses_the_process_and_says_what_matched)
{
	char re[4200], want[128], *err = NULL;
	char *argv[] = { (char *)bin("rover"),
			 "profile",
			 "--name",
			 re,
			 "--duration",
			 "1s",
			 "--output",
			 "/tmp/rover-cli-name.folded",
			 NULL };
	pid_t p = start_program(bin("tests/programs/demo_burn"), NULL);
	struct folded f;
	int rc;

	cr_assert_gt(p, 0);
	snprintf(re, sizeof(re), "^%s$", bin("tests/programs/demo_burn"));
	rc = run_cmd(argv, &err);
	stop_program(p);
	cr_assert_eq(rc, 0, "%s", err);
	snprintf(want, sizeof(want),
		 "process %d (demo_burn) matched by its executable and command line\n", (int)p);
	cr_assert(err && strstr(err, want), "%s", err);
	cr_assert_null(strstr(err, "(rover)"), "the command chose itself: %s", err);
	cr_assert_eq(folded_read("/tmp/rover-cli-name.folded", &f), 0);
	cr_assert_gt(folded_with_leaf(&f, "burn_a"), 0);
	folded_free(&f);
	unlink("/tmp/rover-cli-name.folded");
	free(err);
}

Test(cli, a_missing_privilege)
{
	char *argv[] = { "/usr/sbin/runuser",
			 "-u",
			 "nobody",
			 "--",
			 (char *)bin("rover"),
			 "profile",
			 "--pid",
			 "1",
			 "--output",
			 "/tmp/rover-cli-nobody.folded",
			 NULL };

	expect_one_line_error(argv, 1, "needs root");
}

Test(cli, help_documents_every_option)
{
	char cmd[4200], buf[8192];
	const char *opts[] = { "--pid",	     "--output",      "--format",	  "--type",
			       "--duration", "--dump-period", "--flush-interval", "--user",
			       "--connect",  "--name",	      "--children" };
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s profile --help", bin("rover"));
	p = popen(cmd, "r");
	cr_assert(p);
	n = fread(buf, 1, sizeof(buf) - 1, p);
	buf[n] = '\0';
	cr_assert_eq(pclose(p), 0);
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		cr_assert(strstr(buf, opts[i]), "help lacks %s", opts[i]);
}

/* Every long option a help text names ("--name"), into opts (count in *n, at most max). */
static void options_of(const char *help, char opts[][64], size_t *n, size_t max)
{
	for (const char *p = help; (p = strstr(p, "--")); p += 2) {
		size_t len = 2;
		int seen = 0;

		while (p[len] == '-' || (p[len] >= 'a' && p[len] <= 'z'))
			len++;
		if (len < 4 || len >= 64 ||
		    (p > help && p[-1] != ' ' && p[-1] != '[' && p[-1] != '(' && p[-1] != '`'))
			continue;
		for (size_t i = 0; i < *n; i++)
			seen |= !strncmp(opts[i], p, len) && !opts[i][len];
		if (!seen && *n < max) {
			memcpy(opts[*n], p, len);
			opts[(*n)++][len] = 0;
		}
	}
}

/*
 * build/rover.1 is made from the help the commands print (scripts/gen-man.sh): every option of
 * every command's help is in it, as roff writes it (\-\-name), and man renders it without a
 * warning.
 */
Test(cli, the_man_page_holds_every_option_the_help_prints)
{
	static const char *const cmds[] = { "", "profile", "watch", "run", "serve" };
	char page[4200], cmd[4400], opts[128][64];
	char *man = NULL, *warn = NULL;
	size_t n = 0, len;

	snprintf(page, sizeof(page), "%s/rover.1", getenv("ROVER_BUILD"));
	man = slurp(page, &len);
	cr_assert_not_null(man, "no %s: `make all` makes it", page);
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
		char buf[16384];
		FILE *p;
		size_t got;

		snprintf(cmd, sizeof(cmd), "%s %s --help", bin("rover"), cmds[c]);
		p = popen(cmd, "r");
		cr_assert(p);
		got = fread(buf, 1, sizeof(buf) - 1, p);
		buf[got] = 0;
		cr_assert_eq(pclose(p), 0, "%s", cmd);
		options_of(buf, opts, &n, 128);
	}
	cr_assert_gt(n, 20, "only %zu options found in the help", n);
	for (size_t i = 0; i < n; i++) {
		char roff[160];
		size_t k = 0;

		for (const char *q = opts[i]; *q && k < sizeof(roff) - 3; q++) {
			if (*q == '-')
				roff[k++] = '\\';
			roff[k++] = *q;
		}
		roff[k] = 0;
		cr_assert(strstr(man, roff), "%s is in the help, not in rover.1", opts[i]);
	}
	if (!access("/usr/bin/man", X_OK)) {
		char *argv[] = { "/usr/bin/man", "--warnings", "-l", page, NULL };
		int fd = open("/dev/null", O_WRONLY);
		int saved = dup(1), rc;

		/* The page itself to /dev/null; its warnings are what is looked at. */
		dup2(fd, 1);
		rc = run_cmd(argv, &warn);
		dup2(saved, 1);
		close(saved);
		close(fd);
		cr_assert_eq(rc, 0, "man -l: %s", warn);
		cr_assert(!warn || !warn[0], "man warns: %s", warn);
	}
	free(warn);
	free(man);
}

/*
 * `rover watch`: a process idle first, then busy. Nothing is profiled while it idles (a
 * watch with --max-wait on an idle process gives up with status 3 and writes no profile);
 * once its CPU holds above the threshold the profile is taken and names its hot function.
 */
Test(cli, watch_profiles_a_process_once_its_cpu_crosses_the_threshold, .timeout = 90)
{
	char *err = NULL, pidarg[16], out[64] = "/tmp/rover-watch.XXXXXX";
	char *sleeper[] = { "/bin/sleep", "30", NULL };
	pid_t idle = spawn_cmd(sleeper, "/dev/null"), busy;
	struct folded f;
	int rc, fd = mkstemp(out);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_gt(idle, 0);
	snprintf(pidarg, sizeof(pidarg), "%d", (int)idle);
	{
		char *argv[] = {
			(char *)bin("rover"), "watch", "--pid",	   pidarg, "--cpu", "50:3/5",
			"--max-wait",	      "4s",    "--output", out,	   NULL
		};

		rc = run_cmd(argv, &err);
		cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
		cr_assert(err && strstr(err, "no condition held"), "%s", err);
		free(err);
		err = NULL;
	}
	kill(idle, SIGKILL);
	waitpid(idle, NULL, 0);
	busy = start_program(bin("tests/programs/demo_burn"), NULL);
	snprintf(pidarg, sizeof(pidarg), "%d", (int)busy);
	{
		char *argv[] = {
			(char *)bin("rover"), "watch", "--pid",	 pidarg,   "--cpu",	 "50:3/5",
			"--max-wait",	      "30s",   "--type", "on_cpu", "--duration", "2s",
			"--output",	      out,     NULL
		};

		rc = run_cmd(argv, &err);
	}
	stop_program(busy);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
	cr_assert(err && strstr(err, "CPU %") && strstr(err, "profiling"), "%s", err);
	cr_assert_eq(folded_read(out, &f), 0);
	cr_assert_gt(folded_with_leaf(&f, "burn_a"), 0, "no burn_a in the watched profile");
	folded_free(&f);
	free(err);
	unlink(out);
}

Test(cli, watch_refuses_bad_conditions)
{
	char *nocond[] = { (char *)bin("rover"), "watch", "--pid", "1", "--output", "/tmp/x", NULL };
	char *bad[] = { (char *)bin("rover"), "watch",	"--pid", "1", "--cpu", "80:6/5",
			"--output",	      "/tmp/x", NULL };

	expect_one_line_error(nocond, 2, "at least one of --cpu");
	expect_one_line_error(bad, 2, "bad condition");
}
