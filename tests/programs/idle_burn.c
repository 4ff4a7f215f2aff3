// SPDX-License-Identifier: Apache-2.0
/*
 * An idle process that burns one CPU on demand: it sleeps in sigsuspend until SIGUSR1, then
 * spins in burn() until SIGUSR2, then sleeps again; SIGTERM ends it. scripts/bench_continuous.sh
 * watches 200 of them and times a threshold from the moment one starts burning.
 * usage: idle_burn [TAG]   (TAG is only there for a finder's regex to match)
 */
#include <signal.h>
#include <stddef.h>
#include <unistd.h>

static volatile sig_atomic_t burning;
volatile unsigned long sink;

static void on_signal(int sig)
{
	burning = sig == SIGUSR1;
}

__attribute__((noinline)) static void burn(void)
{
	while (burning)
		sink += sink >> 3 ^ 0x9e3779b9ul;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, wait;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	sigprocmask(SIG_BLOCK, &block, &wait);
	sigdelset(&wait, SIGUSR1);
	sigdelset(&wait, SIGUSR2);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	/* For the tests' start_program: the handlers are in place. */
	if (write(1, "ready\n", 6) < 0)
		return 1;
	for (;;) {
		sigsuspend(&wait);
		if (!burning)
			continue;
		sigprocmask(SIG_UNBLOCK, &block, NULL);
		burn();
		sigprocmask(SIG_BLOCK, &block, NULL);
	}
}
