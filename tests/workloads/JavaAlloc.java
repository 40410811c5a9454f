// Java allocations with known shares, for cpa-capture --java-alloc and
// --java-live (tests/bats/java-alloc.bats, bench/java-cost). Commands
// on stdin, one a line, each answered on stdout once done:
//   ratio MIB  threeParts allocates 3/4 of MIB, onePart 1/4, both in
//              4 KiB arrays dropped at once ("done ratio")
//   live MIB   keepPath allocates MIB and keeps it, dropPath allocates
//              3 x MIB and drops it; then System.gc() ("done live")
//   exit
package cpatest;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;

public class JavaAlloc {
	static final int SIZE = 4096;
	static final ArrayList<byte[]> kept = new ArrayList<>();
	static volatile byte[] sink;

	static void threeParts() {
		for (int i = 0; i < 3; i++)
			sink = new byte[SIZE];
	}

	static void onePart() {
		sink = new byte[SIZE];
	}

	static void keepPath() {
		kept.add(new byte[SIZE]);
	}

	static void dropPath() {
		for (int i = 0; i < 3; i++)
			sink = new byte[SIZE];
	}

	static void ratio(long mib) {
		long rounds = mib * 1024 * 1024 / (4 * SIZE);
		for (long r = 0; r < rounds; r++) {
			threeParts();
			onePart();
		}
	}

	static void live(long mib) throws InterruptedException {
		long rounds = mib * 1024 * 1024 / SIZE;
		for (long r = 0; r < rounds; r++) {
			keepPath();
			dropPath();
		}
		sink = null;
		System.gc();
	}

	public static void main(String[] args) throws Exception {
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
		System.out.println("ready " + ProcessHandle.current().pid());
		System.out.flush();
		String line;
		while ((line = in.readLine()) != null) {
			String[] w = line.trim().split(" ");
			long t0 = System.nanoTime();
			if (w[0].equals("ratio"))
				ratio(Long.parseLong(w[1]));
			else if (w[0].equals("live"))
				live(Long.parseLong(w[1]));
			else if (w[0].equals("exit"))
				break;
			System.out.println("done " + w[0] + " " + (System.nanoTime() - t0) / 1000000);
			System.out.flush();
		}
	}
}
