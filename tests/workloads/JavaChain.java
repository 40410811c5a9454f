// Java spinner with a known chain for tests/bats/java.bats: a thread
// named "spin" runs run -> levelA -> levelB -> hotLeaf until SECONDS have
// passed. Run with -XX:CompileCommand=dontinline,cpatest.JavaChain::*
// so that each method keeps its own compiled frame. With --calls N it
// runs the chain N times instead and prints "elapsed MS" (bench/java-cost).
//   java -cp DIR cpatest.JavaChain [SECONDS]
//   java -cp DIR cpatest.JavaChain --calls N
package cpatest;

public final class JavaChain {
	static volatile long sink;

	static long hotLeaf(long x) {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005L + 1442695040888963407L;
		return x;
	}

	static long levelB(long x) {
		return hotLeaf(x) + 1;
	}

	static long levelA(long x) {
		return levelB(x) + 1;
	}

	static void run(long deadline) {
		long x = 1;
		while (System.nanoTime() < deadline)
			x = levelA(x);
		sink = x;
	}

	public static void main(String[] args) throws InterruptedException {
		if (args.length == 2 && args[0].equals("--calls")) {
			long n = Long.parseLong(args[1]), x = 1, t0 = System.nanoTime();
			for (long i = 0; i < n; i++)
				x = levelA(x);
			sink = x;
			System.out.println("elapsed " + (System.nanoTime() - t0) / 1000000);
			return;
		}
		double secs = args.length > 0 ? Double.parseDouble(args[0]) : 10;
		long deadline = System.nanoTime() + (long)(secs * 1e9);
		Thread t = new Thread(() -> run(deadline), "spin");
		t.start();
		System.out.println("ready " + ProcessHandle.current().pid());
		System.out.flush();
		t.join();
	}
}
