// Rust spinner with a known chain, for demangling tests. Built without
// frame pointers:
//   rust_chain::main -> rust_chain::work::run -> rust_chain::work::level_a
//     -> rust_chain::work::level_b -> rust_chain::work::hot_leaf
// Prints "ready PID" once running.  usage: rust_chain [SECONDS]
use std::hint::black_box;
use std::time::{Duration, Instant};

mod work {
    use super::*;

    #[inline(never)]
    pub fn hot_leaf(deadline: Instant) -> u64 {
        let mut sink = 0u64;
        while Instant::now() < deadline {
            for i in 0..100000u64 {
                sink = black_box(sink.wrapping_add(i * 7));
            }
        }
        sink
    }

    #[inline(never)]
    pub fn level_b(deadline: Instant) -> u64 {
        black_box(hot_leaf(deadline)) + black_box(1)
    }

    #[inline(never)]
    pub fn level_a(deadline: Instant) -> u64 {
        black_box(level_b(deadline)) + black_box(1)
    }

    #[inline(never)]
    pub fn run(deadline: Instant) -> u64 {
        black_box(level_a(deadline)) + black_box(1)
    }
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0);
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    println!("ready {}", std::process::id());
    let v = work::run(deadline);
    black_box(v);
}
