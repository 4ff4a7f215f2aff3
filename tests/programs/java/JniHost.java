// SPDX-License-Identifier: Apache-2.0
// Java code that a C program runs by JNI (tests/programs/java/jni_host.c): run(SECONDS) burns
// CPU in größe and, through 本地 ("native"), in the native method nativeBurn that the C program
// registers (its host_native_burn), which calls back into Java (inner, through the C program's
// host_call_back): Java under native code under Java under native code. The two methods'
// names are not ASCII: modified UTF-8 in the class file and in HotSpot's Symbols.
package rover.test;

public class JniHost {
	static volatile long sink;

	static native void nativeBurn(long ms);

	static long größe(long ms) {
		long end = System.nanoTime() + ms * 1_000_000L, x = 0;
		while (System.nanoTime() < end)
			for (int i = 0; i < 1000; i++)
				x = x * 6364136223846793005L + i;
		return x;
	}

	static long inner(long ms) {
		return größe(ms);
	}

	static void 本地(long ms) {
		nativeBurn(ms);
	}

	public static void run(long seconds) {
		long end = System.nanoTime() + seconds * 1_000_000_000L;
		while (System.nanoTime() < end) {
			sink += größe(20);
			本地(10);
		}
	}
}
