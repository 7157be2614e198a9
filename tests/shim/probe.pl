# Perl's clocks for run.sh: the builtin `time` (libc time()), Time::HiRes::gettimeofday and
# Time::HiRes::clock_gettime (MONOTONIC and REALTIME), and Time::HiRes::sleep, read for
# ~300 ms. Checks that no reading goes back; prints `pid N`, `realtime NAME NS GRAIN_NS` and,
# for every clock, `clock LABEL CLOCK NS REAL1_NS REAL2_NS GRAIN_NS REAL_GRAIN_NS` (a reading
# between two REALTIME ones) for run.sh's kernel brackets.
use strict;
use warnings;
use Time::HiRes qw(clock_gettime gettimeofday CLOCK_MONOTONIC CLOCK_REALTIME);

my %last;
sub check {
  my ($name, $value) = @_;
  if (exists $last{$name} && $value < $last{$name}) {
    print STDERR "FAIL: $name went back: $value after $last{$name}\n";
    exit 1;
  }
  $last{$name} = $value;
}

my $end = clock_gettime(CLOCK_MONOTONIC) + 0.3;
my $n = 0;
while (1) {
  my $mono = clock_gettime(CLOCK_MONOTONIC);
  check('monotonic', $mono);
  check('time', time);
  my ($s, $us) = gettimeofday;
  check('gettimeofday', $s * 1_000_000_000 + $us * 1000);
  check('clock_gettime', clock_gettime(CLOCK_REALTIME));
  last if $mono >= $end;
  Time::HiRes::sleep(0.001) if ++$n % 2000 == 0;
}
print "pid $$\n";
print "realtime time ", $last{time} * 1_000_000_000, " 1000000000\n";
print "realtime gettimeofday $last{gettimeofday} 1000\n";
# A double holds ~0.25 us at today's epoch.
printf "realtime clock_gettime %.0f 1000\n", $last{clock_gettime} * 1e9;
# Every clock, by number (Time::HiRes names only some), each between two REALTIME readings.
# A double holds ~0.25 us at today's epoch (REALTIME, TAI), far less for the others.
my @clocks = (['MONOTONIC', 1], ['MONOTONIC_RAW', 4], ['BOOTTIME', 7], ['TAI', 11],
              ['REALTIME_COARSE', 5], ['MONOTONIC_COARSE', 6]);
for my $c (@clocks) {
  my ($name, $id) = @$c;
  my $r1 = clock_gettime(CLOCK_REALTIME);
  my $x = clock_gettime($id);
  my $r2 = clock_gettime(CLOCK_REALTIME);
  printf "clock clock_gettime(%s) %s %.0f %.0f %.0f 1000 1000\n", $name, $name, $x * 1e9,
    $r1 * 1e9, $r2 * 1e9;
}
