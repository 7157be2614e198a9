// Rust's std clocks for run.sh: Instant (CLOCK_MONOTONIC) and SystemTime (CLOCK_REALTIME),
// which std reads through libc's clock_gettime, read for ~300 ms with sleeps. Checks that
// neither goes back; prints `pid N` and `realtime NAME NS GRAIN_NS` for run.sh's bracket.
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
}
