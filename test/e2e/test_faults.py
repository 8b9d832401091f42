"""Ranks fail loudly and fast. One of 2 ranks is killed (SIGKILL: it dies) or
stopped (SIGSTOP: it hangs) mid-run, or fails by itself (out of device memory
on one pipeline stage, or a NaN loss): every other rank must print colo's own
line naming the rank and the collective it waited in, and end non-zero within
--comm-timeout plus one second, both under `colo run --np` (whose mpirun ends
the others when one dies) and under a launcher that does not end them
(mpirun --enable-recovery, as srun without --kill-on-bad-exit or ranks started
by hand); `colo run --np` then says which rank failed first."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import BIN, ROOT, run_colo

TIMEOUT = 5
MODEL = ROOT / "examples" / "gpt2-tiny.onnx"
ADAMW = "loss=lm,optimizer=adamw,lr=1e-3"
SGD = "loss=lm,optimizer=sgd,lr=1e-3"


@pytest.fixture(scope="module")
def exes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faults")
    cache = {}

    def get(plan, train=ADAMW):
        if (plan, train) not in cache:
            exe = tmp / f"{plan}-{len(cache)}"
            run_colo("compile", MODEL, "-o", exe, "--train", train, "--plan", plan)
            cache[plan, train] = exe
        return cache[plan, train]

    return get


def rank_pids(parent):
    """The colo ranks below `parent` (mpirun's children, not the launcher)."""
    out = subprocess.run(["ps", "-o", "pid=,ppid=,comm=", "-e"], capture_output=True,
                         text=True).stdout
    rows = [line.split() for line in out.splitlines()]
    tree, found = {parent}, []
    for _ in range(4):
        for pid, ppid, comm in rows:
            if int(ppid) in tree:
                tree.add(int(pid))
                if comm == "colo" and int(pid) != parent and rank_of(int(pid)) is not None:
                    found.append(int(pid))
    return sorted(set(found))


def rank_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
    except OSError:
        return None
    rank = env.get(b"OMPI_COMM_WORLD_RANK")
    return int(rank) if rank is not None else None


def start(exe, tmp, launcher, *extra):
    """The run's process: `colo run` (which starts mpirun), or mpirun that
    does not end the ranks, each rank writing its exit code and end time."""
    run = [str(BIN / "colo"), "run", str(exe), "--steps", "100000", "--data", "synthetic",
           "--threads", "1", "-o", str(tmp / "w.safetensors"),
           "--comm-timeout", str(TIMEOUT), *extra]
    if launcher == "no-abort":
        record = f'"$@"; echo $? $(date +%s.%N) > {tmp}/end-$OMPI_COMM_WORLD_RANK'
        run = ["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none",
               "--enable-recovery", "--allow-run-as-root", "sh", "-c", record, "sh", *run]
    return subprocess.Popen(run, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def finish(proc):
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return err


def ends(tmp, rank):
    """(exit code, end time) that rank `rank` recorded under no-abort."""
    code, when = (tmp / f"end-{rank}").read_text().split()
    return int(code), float(when)


def rank_lines(err, rank):
    return [line for line in err.splitlines() if line.startswith(f"colo: error: rank {rank}:")]


@pytest.mark.parametrize("launcher", ["colo", "no-abort"])
@pytest.mark.parametrize("fault", ["kill", "stop"])
def test_a_lost_rank_ends_the_run(fault, launcher, exes, tmp_path):
    proc = start(exes("dp=2"), tmp_path, launcher)
    ranks, deadline = {}, time.time() + 60
    while len(ranks) < 2 and time.time() < deadline:
        time.sleep(0.5)
        ranks = {rank_of(pid): pid for pid in rank_pids(proc.pid)}
    assert sorted(ranks) == [0, 1], "the ranks did not start"
    time.sleep(1.0)  # mid-run
    os.kill(ranks[1], signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
    start_time = time.time()
    err = finish(proc)
    elapsed = time.time() - start_time
    print(f"\n{fault} under {launcher}: the run ended with {proc.returncode} "
          f"after {elapsed:.1f} s")
    lines = rank_lines(err, 0)
    assert len(lines) == 1, err
    if launcher == "colo":
        # mpirun ends the survivor at once when a rank dies; a rank that
        # hangs is found by the survivor's deadline.
        assert proc.returncode != 0
        if fault == "kill":
            assert "ended by the launcher while waiting for rank 1 in " in lines[0], err
            assert "colo: error: rank 1 failed first, without a word of its own" in err
            assert elapsed < TIMEOUT
        else:
            assert f"timed out after {TIMEOUT} s waiting for rank 1 in " in lines[0], err
            assert "colo: error: rank 1 failed first: it stopped answering" in err
            assert elapsed < TIMEOUT + 1 + 2  # a second, and mpirun's teardown
    else:
        # Nothing ends the survivor but its own deadline.
        assert f"timed out after {TIMEOUT} s waiting for rank 1 in " in lines[0], err
        code, when = ends(tmp_path, 0)
        print(f"rank 0 ended with {code} after {when - start_time:.2f} s")
        assert code == 1
        assert when - start_time < TIMEOUT + 1


@pytest.mark.parametrize("launcher", ["colo", "no-abort"])
def test_a_rank_out_of_memory_ends_the_others(launcher, exes, tmp_path):
    """Pipeline stage 0 needs more device memory than stage 1 (with SGD 3.3
    and 2.5 MB planned): under a cap between the two, rank 0 fails alone, and
    rank 1 says so."""
    proc = start(exes("pp=2,micro=2", SGD), tmp_path, launcher, "--device-memory", "3M")
    start_time = time.time()
    err = finish(proc)
    elapsed = time.time() - start_time
    print(f"\nout of memory under {launcher}: ended with {proc.returncode} "
          f"after {elapsed:.1f} s")
    own, other = rank_lines(err, 0), rank_lines(err, 1)
    assert len(own) == 1 and "device memory" in own[0] and "needs 3.0 MB" in own[0], err
    assert len(other) == 1, err
    assert re.search(r"rank 1: rank 0 failed: device memory: .* \(this rank was waiting "
                     r"for .* in \w+\)$", other[0]), err
    # Rank 0 ends the run once rank 1 answered (MPI_Abort ends the wrappers
    # of no-abort's ranks too, before they record anything).
    assert elapsed < 1 + 2  # at most the grace for the answers, and mpirun's teardown
    if launcher == "colo":
        assert proc.returncode == 1
        assert "colo: error: rank 0 failed first: device memory" in err


@pytest.mark.parametrize("plan", ["dp=2", "pp=2,micro=2"])
def test_a_nan_ends_every_rank(plan, exes, tmp_path):
    """A learning rate of 1e30 makes the loss NaN at step 2: every rank stops
    there together, the run says so once, and the weights of step 1 are kept."""
    exe = exes(plan, "loss=lm,optimizer=sgd,lr=1e30")
    proc = run_colo("run", exe, "--steps", 5, "--data", "synthetic", "--comm-timeout",
                    TIMEOUT, "-o", tmp_path / "w.safetensors", check=False)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("colo: error:")]
    assert errors == ["colo: error: loss is nan at step 2"], proc.stderr
    assert "wrote the weights from before step 2" in proc.stderr
    assert (tmp_path / "w.safetensors").exists()
