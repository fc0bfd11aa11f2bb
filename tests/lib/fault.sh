# fault.sh: what the fault loops share (tests/agent-fault.t,
# tests/report-fault.t); source it after tap.sh. The fault build
# ($BUILD/fault, made by make test) counts the agent's and the reader's
# allocation calls and fails the ones the environment names
# (src/util/mp_fault.h).

FAULT=$BUILD/fault
# The ASan runtime, for an instrumented module loaded by a plain luajit.
ASAN_RT=$(${SAN_CC:-clang} -print-file-name=libclang_rt.asan-x86_64.so)
# Leaks are checked at exit; the first report of any kind ends the run
# with status 99 (never a status of the program's own).
export ASAN_OPTIONS=detect_leaks=1:exitcode=99:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:exitcode=99

# fault_pick SITES EVERY FIRST: the Ns to fail, one a line, from a
# counting run's MP_FAULT_SITES file: the FIRST first calls and the last
# of every site (a site is a call's caller and three frames above, so a
# helper such as a hash table's growth counts once per table that grows
# it), and every EVERYth call besides.
fault_pick() {
  awk -v every="$2" -v first="$3" '{
      seen[$2]++
      if (seen[$2] <= first || $1 % every == 0) pick[$1] = 1
      last[$2] = $1
    }
    END { for (s in last) pick[last[s]] = 1; for (n in pick) print n }' "$1" |
    sort -n
}

# fault_calls REPORT: how many allocation calls the run made, from an
# MP_FAULT_REPORT file ("calls C failed K"); 0 if it wrote none.
fault_calls() {
  if [ -s "$1" ]; then sed -n 's/^calls \([0-9]*\) failed [0-9]*$/\1/p' "$1"
  else echo 0; fi
}

# fault_failed REPORT: how many calls failed; "none" if the run wrote no
# report (it died).
fault_failed() {
  if [ -s "$1" ]; then sed -n 's/^calls [0-9]* failed \([0-9]*\)$/\1/p' "$1"
  else echo none; fi
}
