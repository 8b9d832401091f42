"""The hostile-file acceptance test: every file of hostile_corpus.py, of every
format colo reads (ONNX, .npy, .npz, token files, safetensors, program.pb,
checkpoints, plan files, cluster files, TorchScript), makes colo exit with
code 1 and one `colo: error:` line naming the file and the problem; none
crashes, hangs, prints a traceback or more lines, or is accepted.

Run it against another build (an AddressSanitizer one) with COLO_BIN. Each
case has COLO_HOSTILE_TIMEOUT seconds (default 60) and 8 GiB (an address
space limit, or ASan's hard_rss_limit_mb under ASan, whose shadow memory
needs the address space) so that a file cannot take the machine's memory;
the cases run in parallel."""
import collections
import os
import resource
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import hostile_corpus
from conftest import BIN, run_colo

TIMEOUT = float(os.environ.get("COLO_HOSTILE_TIMEOUT", 60))

# Files colo still accepts, each an open bug: the test fails when one is
# refused as it should be, so that it leaves this list.
KNOWN_BUGS = {
}
MEMORY_MB = 8192


def _asan():
    with open(BIN / "colo", "rb") as f:
        return b"__asan_init" in f.read()


def _limits():
    """(environment, preexec_fn) that cap a case's memory."""
    env = dict(os.environ)
    if _asan():
        opts = env.get("ASAN_OPTIONS", "")
        if "hard_rss_limit_mb" not in opts:
            env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + f"hard_rss_limit_mb={MEMORY_MB}"
        # An allocation past what ASan supports fails as it would without it
        # (std::bad_alloc: colo's "out of memory" line), not as a report.
        env["ASAN_OPTIONS"] += ":allocator_may_return_null=1"
        return env, None
    limit = MEMORY_MB << 20
    return env, lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    return d, hostile_corpus.write_corpus(d, lambda *args: run_colo(*args))


def run_case(d, case, env, preexec):
    """(exit code or None on a timeout, stderr, seconds) of one case, run in
    the corpus directory in a session of its own (a timeout kills all of it,
    a crash handler's symbolizer too)."""
    start = time.time()
    proc = subprocess.Popen([str(BIN / "colo"), *case.args], cwd=d, env=env,
                            preexec_fn=preexec, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=TIMEOUT)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        code = None
    return code, err.decode(errors="replace"), time.time() - start


def test_corpus_size(corpus):
    _, cases = corpus
    counts = collections.Counter(c.fmt for c in cases)
    print("\nhostile files per format: " +
          ", ".join(f"{f} {counts[f]}" for f in hostile_corpus.FORMATS))
    assert len(cases) >= 200
    assert set(counts) == set(hostile_corpus.FORMATS), counts
    assert len({c.name for c in cases}) == len(cases)


def test_each_hostile_file_is_refused(corpus):
    d, cases = corpus
    env, preexec = _limits()
    start = time.time()
    # More workers than cores: a case that hangs until its timeout holds one.
    with ThreadPoolExecutor(max(8, 2 * (os.cpu_count() or 1))) as pool:
        results = list(pool.map(lambda c: run_case(d, c, env, preexec), cases))
    failures = []
    known = 0
    per_format = collections.Counter()
    failed_per_format = collections.Counter()
    for case, (code, stderr, seconds) in zip(cases, results):
        per_format[case.fmt] += 1
        # Under ASan a refused allocation also gets the allocator's notice.
        stderr = "".join(line for line in stderr.splitlines(keepends=True)
                         if "WARNING: AddressSanitizer failed to allocate" not in line)
        why = hostile_corpus.problem(case, code, stderr, d)
        if case.name in KNOWN_BUGS:
            known += 1
            if why is None:
                failures.append(f"{case.name} is refused now: remove it from KNOWN_BUGS")
            continue
        if why is not None:
            failed_per_format[case.fmt] += 1
            head = " | ".join(l for l in stderr.splitlines()[:3] if l.strip())[:400]
            failures.append(f"{case.fmt} {case.name}: {why} ({seconds:.1f} s)\n"
                            f"    colo {' '.join(case.args)}\n    stderr: {head}")
    print(f"\n{len(cases)} hostile files in {time.time() - start:.1f} s: " +
          ", ".join(f"{f} {per_format[f] - failed_per_format[f]}/{per_format[f]}"
                    for f in hostile_corpus.FORMATS) + f" (with {known} known bugs)")
    assert not failures, f"{len(failures)} of {len(cases)} hostile files:\n" + \
        "\n".join(failures)
