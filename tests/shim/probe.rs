// Rust's std clocks for run.sh: Instant (CLOCK_MONOTONIC) and SystemTime (CLOCK_REALTIME),
// which std reads through libc's clock_gettime, read for ~300 ms with sleeps. Checks that
// neither goes back; prints `pid N`, `realtime NAME NS GRAIN_NS` and `clock LABEL CLOCK NS
// REAL1_NS REAL2_NS GRAIN_NS REAL_GRAIN_NS` (Instant between two SystemTime) for run.sh's
// kernel brackets.
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn main() {
    let end = Instant::now() + Duration::from_millis(300);
    let mut last_instant = Instant::now();
    let mut last_system = SystemTime::now();
    let mut n: u64 = 0;
    loop {
        let instant = Instant::now();
        let system = SystemTime::now();
        if instant < last_instant || system < last_system {
            eprintln!("FAIL: went back: {:?} after {:?}, {:?} after {:?}",
                      instant, last_instant, system, last_system);
            std::process::exit(1);
        }
        last_instant = instant;
        last_system = system;
        if instant >= end {
            break;
        }
        n += 1;
        if n % 4096 == 0 {
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    let ns = last_system.duration_since(UNIX_EPOCH).expect("before 1970").as_nanos();
    println!("pid {}", std::process::id());
    println!("realtime SystemTime {} 1", ns);
    let r1 = SystemTime::now();
    let x = Instant::now();
    let r2 = SystemTime::now();
    // std gives no number for an Instant; its Debug form shows the timespec on Linux
    // (`tv_sec: N, tv_nsec: N`, nested differently in different releases).
    // (No let-else: Debian 12's rustc is 1.63.)
    let x_ns = match instant_ns(&format!("{:?}", x)) {
        Some(ns) => ns,
        None => {
            eprintln!("FAIL: no tv_sec and tv_nsec in an Instant's Debug form: {:?}", x);
            std::process::exit(1);
        }
    };
    let real = |t: SystemTime| t.duration_since(UNIX_EPOCH).expect("before 1970").as_nanos();
    println!("clock Instant MONOTONIC {} {} {} 1 1", x_ns, real(r1), real(r2));
}

fn instant_ns(debug: &str) -> Option<u128> {
    let field = |name: &str| -> Option<u128> {
        let rest = &debug[debug.find(name)? + name.len()..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse().ok()
    };
    Some(field("tv_sec: ")? * 1_000_000_000 + field("tv_nsec: ")?)
}
