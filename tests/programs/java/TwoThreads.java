// SPDX-License-Identifier: Apache-2.0
// Two threads burning CPU in two methods for SECONDS seconds, A with three times B's work per
// round; prints "ready" once both run, then "cpu MONOTONIC_NS A_NS B_NS" (ThreadMXBean)
// every 100 ms and "share burnA PCT" at the end: the split a profile must find, over its time.
package rover.test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class TwoThreads {
	static volatile long sink;

	static long burnA(long n) {
		long x = 0;
		for (long i = 0; i < n; i++)
			x = x * 6364136223846793005L + i;
		return x;
	}

	static long burnB(long n) {
		long x = 1;
		for (long i = 0; i < n; i++)
			x = x * 2862933555777941757L + i;
		return x;
	}

	public static void main(String[] args) throws Exception {
		long seconds = Long.parseLong(args[0]);
		long end = System.nanoTime() + seconds * 1_000_000_000L;
		ThreadMXBean mx = ManagementFactory.getThreadMXBean();
		Thread a = new Thread(() -> {
			while (System.nanoTime() < end)
				sink += burnA(3_000_000);
		}, "burn-a");
		Thread b = new Thread(() -> {
			while (System.nanoTime() < end)
				sink += burnB(1_000_000);
		}, "burn-b");
		a.start();
		b.start();
		System.out.println("ready");
		System.out.flush();
		long ca = 0, cb = 0, k = 0;
		while (a.isAlive() || b.isAlive()) {
			long x = mx.getThreadCpuTime(a.getId()), y = mx.getThreadCpuTime(b.getId());
			if (x > 0)
				ca = x;
			if (y > 0)
				cb = y;
			if (k++ % 5 == 0)
				System.out.printf("cpu %d %d %d%n", System.nanoTime(), ca, cb);
			Thread.sleep(20);
		}
		System.out.printf("share burnA %.1f%n", 100.0 * ca / (ca + cb));
		System.out.printf("share burnB %.1f%n", 100.0 * cb / (ca + cb));
	}
}
