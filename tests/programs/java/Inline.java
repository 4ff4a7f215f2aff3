// SPDX-License-Identifier: Apache-2.0
// One thread burning CPU for SECONDS seconds in hot(), whose callees mid() and step() are small
// enough for C2 to inline (no flag needed): its samples run in hot's compiled code, in step's
// loop. Prints "ready" once hot ran a second (compiled by then). The lines below are the
// test's: tests/integration/test_java.c names them.
package rover.test;

public class Inline {
	static volatile long sink;

	static long step(long x, int k) {
		for (int j = 0; j < k; j++)
			x = x * 6364136223846793005L + j;
		return x;
	}

	static long mid(long x, int k) {
		return step(x, k) ^ k;
	}

	static long hot(long n) {
		long x = 0;
		for (long i = 0; i < n; i++)
			x = mid(x, 1000);
		return x;
	}

	public static void main(String[] args) throws Exception {
		long seconds = Long.parseLong(args[0]);
		long end = System.nanoTime() + seconds * 1_000_000_000L;
		Thread t = new Thread(() -> {
			while (System.nanoTime() < end)
				sink += hot(10_000);
		}, "hot");
		t.start();
		Thread.sleep(1000);
		System.out.println("ready");
		System.out.flush();
		t.join();
	}
}
