// SPDX-License-Identifier: Apache-2.0
// Loaded by tests/programs/java/Unload.java's throwaway class loaders.
package rover.plug;

public class Burn1 implements Runnable {
	public static volatile long sink;

	static long burnOne(long n) {
		long x = 0;
		for (long i = 0; i < n; i++)
			x = x * 6364136223846793005L + i;
		return x;
	}

	public void run() {
		sink += burnOne(300_000);
	}
}
