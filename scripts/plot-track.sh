#!/usr/bin/env bash
# Plots the CSV of `vclock track --csv FILE`: p99 and max |error| per interval
# for each clock, in ns, to FILE.png. Needs gnuplot (Debian: gnuplot-nox).
set -euo pipefail
csv=${1:?usage: scripts/plot-track.sh TRACK.csv [OUT.png]}
out=${2:-${csv%.csv}.png}
command -v gnuplot >/dev/null || { echo "plot-track: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 2; }
clocks=$(tail -n +2 "$csv" | cut -d, -f2 | sort -u)
plots=()
for c in $clocks; do
  plots+=("'< grep \",$c,\" $csv' using 1:6 with linespoints title '$c p99'")
  plots+=("'< grep \",$c,\" $csv' using 1:7 with lines dashtype 2 title '$c max'")
done
gnuplot <<GNUPLOT
set datafile separator ','
set terminal pngcairo size 1100,600
set output '$out'
set title 'vclock - kernel, |error| per interval (vclock track)'
set xlabel 'time (s)'
set ylabel 'ns'
set logscale y
set key outside right
plot $(IFS=,; echo "${plots[*]}")
GNUPLOT
echo "wrote $out"
