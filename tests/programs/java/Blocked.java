// SPDX-License-Identifier: Apache-2.0
// Four threads that spend SECONDS seconds blocked, each in its own pair of methods and a
// blocking call of its own, over and over (a thread is counted OFF_CPU when it comes back):
// Thread.sleep, Object.wait, a socket read (a fifth thread writes a byte every 20 ms) and
// LockSupport.parkNanos. Prints "ready" once all run.
package rover.test;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.locks.LockSupport;

public class Blocked {
	static final Object lock = new Object();
	static volatile long end;

	static void sleepIn() throws InterruptedException {
		Thread.sleep(20);
	}

	static void sleepOuter() throws InterruptedException {
		while (System.nanoTime() < end)
			sleepIn();
	}

	static void waitIn() throws InterruptedException {
		synchronized (lock) {
			lock.wait(20);
		}
	}

	static void waitOuter() throws InterruptedException {
		while (System.nanoTime() < end)
			waitIn();
	}

	static int readIn(InputStream in) throws Exception {
		return in.read();
	}

	static void readOuter(InputStream in) throws Exception {
		while (System.nanoTime() < end && readIn(in) >= 0)
			;
	}

	static void parkIn() {
		LockSupport.parkNanos(20_000_000L);
	}

	static void parkOuter() {
		while (System.nanoTime() < end)
			parkIn();
	}

	interface Body {
		void run() throws Exception;
	}

	static Thread start(String name, Body b) {
		Thread t = new Thread(() -> {
			try {
				b.run();
			} catch (Exception e) {
				throw new RuntimeException(e);
			}
		}, name);
		t.setDaemon(true);
		t.start();
		return t;
	}

	public static void main(String[] args) throws Exception {
		end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
		ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
		Socket client = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
		Socket peer = server.accept();
		InputStream in = peer.getInputStream();
		OutputStream out = client.getOutputStream();
		Thread[] ts = { start("sleeper", Blocked::sleepOuter), start("waiter", Blocked::waitOuter),
				start("reader", () -> readOuter(in)), start("parker", Blocked::parkOuter) };
		System.out.println("ready");
		System.out.flush();
		while (System.nanoTime() < end) {
			out.write(1);
			out.flush();
			Thread.sleep(20);
		}
		for (Thread t : ts)
			t.join(1000);
	}
}
