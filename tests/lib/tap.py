"""tap.py: a minimal TAP producer for the Python tests (as tap.lua and
tap.sh are for the others)."""
import subprocess
import sys

_n = _failed = 0


def ok(cond, name, diag=""):
    """One check; diag is printed as TAP diagnostics when it fails."""
    global _n, _failed
    _n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", _n, name))
    if not cond:
        _failed += 1
        for line in str(diag).splitlines():
            print("# " + line)
    sys.stdout.flush()
    return cond


def is_(got, want, name):
    return ok(got == want, name, "expected: %r\n  actual: %r" % (want, got))


def run(*args, **kw):
    """Run a command (at most 120 s); its stdout, or None on failure."""
    p = subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)
    if p.returncode != 0:
        print("# %s: status %d: %s" % (" ".join(args), p.returncode,
                                       p.stderr.strip()[:500]))
        return None
    return p.stdout


def count():
    """The checks made so far."""
    return _n


def done():
    """The plan, and the exit status: 1 if a check failed."""
    print("1..%d" % _n)
    sys.exit(1 if _failed else 0)
