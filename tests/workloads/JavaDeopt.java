// A compiled frame the JVM deoptimizes while it is on the stack, for
// tests/bats/java.bats: outer() is compiled with Square.area inlined (the
// one class extending Shape, so the call needs no dispatch), then
// called once more into spin(), which does not return. Meanwhile a
// second subclass of Shape is loaded: outer's code no longer holds,
// the JVM deoptimizes it, and the return address spin's frame holds is
// replaced by outer's deoptimization handler, the original kept in
// outer's frame. It prints "deopt" once the class is loaded; the chain
// stays main -> outer -> Square.area (inlined) -> spin.
//   java -XX:CompileCommand=dontinline,cpatest.JavaDeopt::spin
//        -cp DIR cpatest.JavaDeopt [SECONDS]
package cpatest;

public final class JavaDeopt {
	abstract static class Shape {
		abstract long area(long x);
	}

	static final class Square extends Shape {
		long area(long x) {
			return spin(x) * 2;
		}
	}

	static final class Circle extends Shape {
		long area(long x) {
			return x * 3;
		}
	}

	static volatile boolean forever;
	static volatile long deadline;
	static volatile long sink;

	static long spin(long x) {
		if (!forever)
			return x + 1;
		while (System.nanoTime() < deadline)
			for (int i = 0; i < 100000; i++)
				x = x * 6364136223846793005L + 1442695040888963407L;
		return x;
	}

	static long outer(Shape s, long x) {
		return s.area(x) + 1;
	}

	public static void main(String[] args) throws Exception {
		double secs = args.length > 0 ? Double.parseDouble(args[0]) : 10;
		Shape sq = new Square();
		long x = 1;
		for (int i = 0; i < 2000000; i++)
			x = outer(sq, x);
		sink = x;
		Thread loader = new Thread(() -> {
			try {
				Thread.sleep(1000);
				Shape c = (Shape) Class.forName("cpatest.JavaDeopt$Circle")
					.getDeclaredConstructor().newInstance();
				sink += c.area(1);
				System.out.println("deopt");
				System.out.flush();
			} catch (Exception e) {
				throw new RuntimeException(e);
			}
		}, "loader");
		deadline = System.nanoTime() + (long)(secs * 1e9);
		forever = true;
		System.out.println("ready " + ProcessHandle.current().pid());
		System.out.flush();
		loader.start();
		sink = outer(sq, x);
	}
}
