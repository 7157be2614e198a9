// Java's clocks for run.sh: System.nanoTime (CLOCK_MONOTONIC), System.currentTimeMillis and
// Instant.now (CLOCK_REALTIME), all called from libjvm.so, read for ~300 ms with sleeps.
// Checks that no reading goes back; prints `pid N`, `realtime NAME NS GRAIN_NS` and `clock LABEL
// CLOCK NS REAL1_NS REAL2_NS GRAIN_NS REAL_GRAIN_NS` (nanoTime between two Instant.now) for
// run.sh's kernel brackets.
import java.time.Instant;

public final class Probe {
  public static void main(String[] args) throws InterruptedException {
    final long end = System.nanoTime() + 300_000_000L;
    long lastNano = Long.MIN_VALUE;
    long lastMillis = Long.MIN_VALUE;
    Instant lastInstant = Instant.MIN;
    for (long n = 1; ; ++n) {
      final long nano = System.nanoTime();
      final long millis = System.currentTimeMillis();
      final Instant instant = Instant.now();
      if (nano < lastNano || millis < lastMillis || instant.isBefore(lastInstant)) {
        System.err.printf("FAIL: went back: nanoTime %d after %d, currentTimeMillis %d after %d,"
            + " Instant %s after %s%n", nano, lastNano, millis, lastMillis, instant, lastInstant);
        System.exit(1);
      }
      lastNano = nano;
      lastMillis = millis;
      lastInstant = instant;
      if (nano - end >= 0) break;
      if (n % 20_000 == 0) Thread.sleep(1);
    }
    System.out.println("pid " + ProcessHandle.current().pid());
    System.out.println("realtime currentTimeMillis " + lastMillis * 1_000_000L + " 1000000");
    // Instant.now is to the microsecond on some JDKs.
    System.out.println("realtime Instant.now "
        + (lastInstant.getEpochSecond() * 1_000_000_000L + lastInstant.getNano()) + " 1000");
    final Instant r1 = Instant.now();
    final long x = System.nanoTime();
    final Instant r2 = Instant.now();
    System.out.println("clock nanoTime MONOTONIC " + x + " "
        + (r1.getEpochSecond() * 1_000_000_000L + r1.getNano()) + " "
        + (r2.getEpochSecond() * 1_000_000_000L + r2.getNano()) + " 1 1000");
  }
}
