// Java workloads whose paths take known shares of their threads' time,
// for tests/bats/java-jfr.bats, run with the JVM's default flags so that
// the JIT inlines what it likes. Each path's unit of work is the same
// loop; the workload counts its own truth, the CPU time each path took
// (ThreadMXBean, per block of work), and prints it every 200 ms (the
// cold paths' constants differ from the hot ones', at the same cost, so
// that the JIT cannot merge the two loops into one):
//   truth SERVE_HOT SERVE_COLD POOL_HOT POOL_COLD STREAM_HOT STREAM_COLD
// (nanoseconds since the start).
//   serve:   serve -> handle -> parse -> computeHot three blocks in four,
//            computeCold the fourth: C2 inlines the chain into serve
//   pool-*:  a thread pool running two lambdas, the first submitted
//            three times in four (poolHot), the second once (poolCold)
//   streams: LongStream pipelines calling streamHot for each element
//            three times in four, streamCold the fourth
//   java -cp DIR cpatest.JavaInline [SECONDS]
package cpatest;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.stream.LongStream;

public final class JavaInline {
	static volatile long sink;
	static final int WORK = 2000;
	static final ThreadMXBean TMX = ManagementFactory.getThreadMXBean();
	// serve hot, cold; pool hot, cold; streams hot, cold
	static final AtomicLongArray truth = new AtomicLongArray(6);

	static long cpu() {
		return TMX.getCurrentThreadCpuTime();
	}

	static long computeHot(long x) {
		for (int i = 0; i < WORK; i++)
			x = x * 6364136223846793005L + 1442695040888963407L;
		return x;
	}

	static long computeCold(long x) {
		for (int i = 0; i < WORK; i++)
			x = x * 2862933555777941757L + 3037000493L;
		return x;
	}

	static long parse(long x, int block) {
		return (block & 3) != 3 ? computeHot(x) : computeCold(x);
	}

	static long handle(long x, int block) {
		return parse(x, block) + 1;
	}

	static void serve(long deadline) {
		long x = 1;
		for (int b = 0; System.nanoTime() < deadline; b++) {
			long t0 = cpu();
			for (int k = 0; k < 256; k++)
				x = handle(x, b);
			truth.addAndGet((b & 3) != 3 ? 0 : 1, cpu() - t0);
		}
		sink = x;
	}

	static long poolHot(long x) {
		for (int i = 0; i < WORK; i++)
			x = x * 6364136223846793005L + 1442695040888963407L;
		return x;
	}

	static long poolCold(long x) {
		for (int i = 0; i < WORK; i++)
			x = x * 2862933555777941757L + 3037000493L;
		return x;
	}

	// Tasks go in as tasks come out, eight in the pool's queue: the pool
	// stays busy, and a hot and a cold task alike wait their turn.
	static void pool(long deadline) throws Exception {
		ExecutorService ex = Executors.newFixedThreadPool(1);
		Future<?>[] f = new Future<?>[8];
		for (int k = 0; System.nanoTime() < deadline; k++) {
			if (f[k & 7] != null)
				f[k & 7].get();
			if ((k & 3) != 3)
				f[k & 7] = ex.submit(() -> {
					long t0 = cpu(), x = sink | 1;
					for (int j = 0; j < 256; j++)
						x = poolHot(x);
					sink = x;
					truth.addAndGet(2, cpu() - t0);
				});
			else
				f[k & 7] = ex.submit(() -> {
					long t0 = cpu(), x = sink | 1;
					for (int j = 0; j < 256; j++)
						x = poolCold(x);
					sink = x;
					truth.addAndGet(3, cpu() - t0);
				});
		}
		ex.shutdown();
	}

	static long streamHot(long x) {
		for (int i = 0; i < WORK; i++)
			x = x * 6364136223846793005L + 1442695040888963407L;
		return x;
	}

	static long streamCold(long x) {
		for (int i = 0; i < WORK; i++)
			x = x * 2862933555777941757L + 3037000493L;
		return x;
	}

	static void streams(long deadline) {
		for (int b = 0; System.nanoTime() < deadline; b++) {
			long t0 = cpu();
			if ((b & 3) != 3)
				LongStream.range(0, 1024)
					.forEach(v -> sink = streamHot(v));
			else
				LongStream.range(0, 1024)
					.forEach(v -> sink = streamCold(v));
			truth.addAndGet((b & 3) != 3 ? 4 : 5, cpu() - t0);
		}
	}

	public static void main(String[] args) throws Exception {
		double secs = args.length > 0 ? Double.parseDouble(args[0]) : 10;
		long deadline = System.nanoTime() + (long)(secs * 1e9);
		Thread s = new Thread(() -> serve(deadline), "serve");
		Thread p = new Thread(() -> {
			try {
				pool(deadline);
			} catch (Exception e) {
				throw new RuntimeException(e);
			}
		}, "pool");
		Thread st = new Thread(() -> streams(deadline), "streams");
		s.start();
		p.start();
		st.start();
		System.out.println("ready " + ProcessHandle.current().pid());
		while (s.isAlive() || p.isAlive() || st.isAlive()) {
			StringBuilder b = new StringBuilder("truth");
			for (int i = 0; i < 6; i++)
				b.append(' ').append(truth.get(i));
			System.out.println(b);
			System.out.flush();
			Thread.sleep(200);
		}
	}
}
