// SPDX-License-Identifier: Apache-2.0
/*
 * What the roles load at start: a one-shot `rover profile` (no backend, no Kubernetes) maps
 * neither gRPC nor libcurl in its supervisor and shipper (they cost ~30 ms of ld.so each,
 * docs/performance.md, "One-shot start-up"); an agent with a backend whose OAP module is missing or
 * broken stops at once and names the file, rather than restarting its roles forever. The Go
 * TLS disassembler (libcapstone, 15 ms of relocations) is loaded by the shipper of a NETWORK
 * task only.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/integration/harness.h"

#define SUPERVISOR_COMM "rover-superviso"
#define SHIPPER_COMM "rover-shipper"
#define WORKER_COMM "rover-worker"

TestSuite(startup, .init = tmp_setup, .fini = tmp_teardown, .timeout = 120);

/* What a backend or Kubernetes brings, and a one-shot must not map. */
static const char *const backend_libs[] = { "librover-oap", "libgrpc", "libgpr", "libabsl",
					    "libcares",	    "libre2",  "libssl", "libcurl" };

static void expect_maps_capstone(pid_t ship, int want)
{
	char *hit;

	cr_assert_gt(ship, 0, "no shipper");
	hit = proc_maps_grep(ship, "libcapstone");
	cr_assert_not_null(hit, "cannot read the maps of the shipper (%d)", (int)ship);
	if (want)
		cr_expect_str_not_empty(hit, "the NETWORK task's shipper has no libcapstone");
	else
		cr_expect_str_empty(hit, "the ON_CPU one-shot's shipper maps libcapstone:\n%s",
				    hit);
	free(hit);
}

static void expect_maps_none(pid_t pid, const char *who)
{
	cr_assert_gt(pid, 0, "no %s", who);
	for (size_t i = 0; i < sizeof(backend_libs) / sizeof(backend_libs[0]); i++) {
		char *hit = proc_maps_grep(pid, backend_libs[i]);

		cr_assert_not_null(hit, "cannot read the maps of the %s (%d)", who, (int)pid);
		cr_expect_str_empty(hit, "the one-shot's %s maps %s:\n%s", who, backend_libs[i],
				    hit);
		free(hit);
	}
}

/*
 * `rover profile` of a burning process as type (NULL: ON_CPU); once its worker runs (both
 * roles past their start-up and sandbox), check(supervisor, shipper); then its exit status.
 */
static void one_shot(const char *type, void (*check)(pid_t sup, pid_t ship))
{
	pid_t target = start_program(bin("tests/programs/demo_burn"), NULL);
	char pid[16], *out = tmp_path("out"), *errpath = tmp_path("profile.err");
	char *argv[] = {
		(char *)bin("rover"), "profile", "--pid",  pid,		 "--duration", "3s",
		"--output",	      out,	 "--type", (char *)type, NULL
	};
	pid_t task;
	int rc;

	cr_assert_gt(target, 0);
	snprintf(pid, sizeof(pid), "%d", (int)target);
	if (!type)
		argv[8] = NULL;
	task = spawn_cmd(argv, errpath);
	cr_assert_gt(wait_child(task, WORKER_COMM, 10000), 0, "no worker started:\n%s",
		     slurp(errpath, NULL));
	check(find_child(task, SUPERVISOR_COMM), find_child(task, SHIPPER_COMM));
	rc = wait_cmd(task, 30000);
	stop_program(target);
	cr_expect_eq(rc, 0, "rover profile exited %d:\n%s", rc, slurp(errpath, NULL));
}

static void stack_roles_map_no_extras(pid_t sup, pid_t ship)
{
	expect_maps_none(sup, "supervisor");
	expect_maps_none(ship, "shipper");
	expect_maps_capstone(ship, 0);
}

Test(startup, a_one_shot_maps_neither_grpc_nor_curl)
{
	one_shot(NULL, stack_roles_map_no_extras);
}

static void network_shipper_has_capstone(pid_t sup, pid_t ship)
{
	(void)sup;
	expect_maps_capstone(ship, 1);
}

/* A NETWORK one-shot may meet Go TLS: its shipper loads the disassembler before its filter. */
Test(startup, a_network_one_shot_loads_the_disassembler)
{
	one_shot("network", network_shipper_has_capstone);
}

/*
 * A directory of its own, readable by the roles' user (the test's tmp is closed to it), with
 * the four binaries copied in and mod as the OAP module (NULL: none).
 */
static char *bindir_with_module(const char *mod)
{
	static const char *const bins[] = { "rover", "rover-supervisor", "rover-worker",
					    "rover-shipper" };
	char *dir = strdup("/tmp/rover-startup.XXXXXX"), cmd[8192];

	cr_assert(dir && mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	for (size_t i = 0; i < sizeof(bins) / sizeof(bins[0]); i++) {
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s/'", bin(bins[i]), dir);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
	}
	if (mod) {
		snprintf(cmd, sizeof(cmd), "%s/librover-oap.so", dir);
		cr_assert_eq(write_file(cmd, mod), 0);
		cr_assert_eq(chmod(cmd, 0644), 0);
	}
	return dir;
}

/* `rover run` from dir with a backend configured: it must stop by itself, quickly, with
 * EX_CONFIG (78), naming the module's path, and never restart a role. */
static void expect_stops_naming_module(const char *dir, const char *what)
{
	char exe[4200], path[4200], *log;
	char *argv[] = { exe, "run", "--config", tmp_path("rover.yaml"), NULL };
	pid_t pid;
	int rc;

	snprintf(exe, sizeof(exe), "%s/rover", dir);
	snprintf(path, sizeof(path), "%s/librover-oap.so", dir);
	/* Nothing listens on port 1: the module is loaded before any connection is tried. */
	cr_assert_eq(write_file(tmp_path("rover.yaml"), "core:\n  backend:\n"
							"    addr: 127.0.0.1:1\n"),
		     0);
	pid = spawn_cmd(argv, tmp_path("rover.log"));
	rc = wait_cmd(pid, 30000);
	log = slurp(tmp_path("rover.log"), NULL);
	cr_assert_not_null(log);
	cr_expect_eq(rc, 78, "%s module: rover run exited %d, not 78 (EX_CONFIG):\n%s", what, rc,
		     log);
	cr_expect(strstr(log, "loading the OAP client") && strstr(log, path),
		  "%s module: the log does not name %s:\n%s", what, path, log);
	cr_expect_null(strstr(log, "restarting"), "%s module: a role was restarted:\n%s", what,
		       log);
	free(log);
}

Test(startup, a_missing_oap_module_stops_the_agent_naming_it)
{
	char *dir = bindir_with_module(NULL);

	expect_stops_naming_module(dir, "missing");
	rm_rf(dir);
	free(dir);
}

Test(startup, a_broken_oap_module_stops_the_agent_naming_it)
{
	char *dir = bindir_with_module("not an ELF file\n");

	expect_stops_naming_module(dir, "broken");
	rm_rf(dir);
	free(dir);
}

/* The module runs as the roles' user: one that others could rewrite is refused like a missing
 * one. */
Test(startup, a_group_writable_oap_module_is_refused)
{
	char *dir = bindir_with_module(NULL), cmd[8192];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s/' && chmod 0664 '%s/librover-oap.so'",
		 bin("librover-oap.so"), dir, dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	expect_stops_naming_module(dir, "group-writable");
	rm_rf(dir);
	free(dir);
}
