// SPDX-License-Identifier: Apache-2.0
// Loads rover.plug.Burn1 and rover.plug.Burn2 (tests/programs/java/plug, compiled apart into
// the directory PLUGDIR) in turn, each time by a new class loader that is dropped after one call,
// for SECONDS seconds, with a GC every 16 loads: the classes are unloaded and their methods'
// memory is reused by the next ones. Burn1 is only ever called from runOne, Burn2 from runTwo:
// a profile that puts one under the other misnamed a frame. Prints "ready", then "unloaded N"
// (classes the JVM unloaded).
package rover.test;

import java.io.File;
import java.lang.management.ManagementFactory;
import java.net.URL;
import java.net.URLClassLoader;

public class Unload {
	static void runOne(Runnable r) {
		r.run();
	}

	static void runTwo(Runnable r) {
		r.run();
	}

	public static void main(String[] args) throws Exception {
		long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
		URL[] dir = { new File(args[1]).toURI().toURL() };
		System.out.println("ready");
		System.out.flush();
		for (int i = 0; System.nanoTime() < end; i++) {
			try (URLClassLoader l = new URLClassLoader(dir, null)) {
				String name = i % 2 == 0 ? "rover.plug.Burn1" : "rover.plug.Burn2";
				Runnable r = (Runnable) l.loadClass(name).getDeclaredConstructor().newInstance();
				if (i % 2 == 0)
					runOne(r);
				else
					runTwo(r);
			}
			if (i % 16 == 15)
				System.gc();
		}
		System.gc();
		System.out.println("unloaded " +
				   ManagementFactory.getClassLoadingMXBean().getUnloadedClassCount());
	}
}
