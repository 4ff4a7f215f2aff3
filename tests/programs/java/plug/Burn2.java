// SPDX-License-Identifier: Apache-2.0
// Loaded by tests/programs/java/Unload.java's throwaway class loaders.
package rover.plug;

public class Burn2 implements Runnable {
	public static volatile long sink;

	static long burnTwo(long n) {
		long x = 1;
		for (long i = 0; i < n; i++)
			x = x * 2862933555777941757L + i;
		return x;
	}

	public void run() {
		sink += burnTwo(300_000);
	}
}
