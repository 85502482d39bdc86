"""mpi4py 4 <-> dlbridge across two processes: `mpiexec -n 2` (MPICH's, from the `mpich`
wheel beside the interpreter) runs python/tests/mpi/dlbridge_checks.py once, and each of its
checks is a test here, passed when both ranks passed it. Then the user's example,
python/examples/mpi_exchange.py, runs the same way.

The job stays on this machine (`-launcher fork -hosts localhost -iface lo`: no ssh, loopback
only) and is bounded (JOB_TIMEOUT seconds, then killed), so a hang fails the tests instead of
stopping the suite. mpi4py 4.1 facts the checks rely on: a message buffer is read through the
buffer protocol first, then through `__dlpack__` (versioned, `copy=False`), and must be
contiguous (C or Fortran) and, to be received into, writable; `comm.send` pickles with protocol
5 in-band; `mpi4py.util.pkl5` sends buffers past `MPI.pickle.THRESHOLD` (256 KiB) out-of-band
and receives them into `MPI.buffer.allocate` memory.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from _frameworks import every_framework_required, import_framework

mpi4py = import_framework("mpi4py", "mpi4py")
if importlib.util.find_spec("torch") is None:  # the ranks use it; not imported here (slow)
    import_framework("torch", "torch")  # skips or fails, saying why

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS = os.path.join(os.path.dirname(HERE), "mpi", "dlbridge_checks.py")
EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "mpi_exchange.py")
JOB_TIMEOUT = 120

# The checks of dlbridge_checks.py, in the order they run.
CHECK_NAMES = [
    "send_recv_numpy",
    "send_recv_torch",
    "send_recv_bfloat16",
    "bcast_numpy_and_torch",
    "allreduce_numpy_and_torch",
    "allreduce_in_place_numpy_and_torch",
    "read_only_tensor_refused_as_a_receive_buffer",
    "refused_receive_leaves_the_message_for_a_valid_one",
    "strided_tensor_refused",
    "object_send_recv",
    "pkl5_out_of_band_zero_copy",
    "pkl5_bcast",
]


def mpiexec() -> str:
    """MPICH's `mpiexec` installed beside this interpreter (the `mpich` wheel's), or the test
    file is skipped (failed under CI on Linux x86_64) saying how to get it."""
    found = shutil.which("mpiexec", path=os.path.dirname(sys.executable))
    if found is None:
        reason = (
            f"no mpiexec beside {sys.executable}: install the mpich wheel "
            "(pip install -r python/requirements-test.txt)"
        )
        if every_framework_required():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return found


def run_job(script: str, *arguments: str) -> subprocess.CompletedProcess:
    """`mpiexec -n 2 python script arguments...` on this machine only, bounded."""
    command = [mpiexec(), "-launcher", "fork", "-hosts", "localhost", "-iface", "lo", "-n", "2"]
    command += [sys.executable, script, *arguments]
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=JOB_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as timeout:
        pytest.fail(f"{' '.join(command)} ran past {JOB_TIMEOUT} s: {timeout.stderr!r}")
        raise  # pytest.fail raises


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """Runs the checks once; their records by (check, rank), and the job itself."""
    folder = tmp_path_factory.mktemp("mpi")
    completed = run_job(CHECKS, "--report", str(folder))
    records = {}
    for rank in (0, 1):
        path = folder / f"rank{rank}.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        for line in lines:
            record = json.loads(line)
            records[record["check"], record["rank"]] = record
    return records, completed


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_check_passes_in_both_ranks(job, name):
    records, completed = job
    for rank in (0, 1):
        record = records.get((name, rank))
        if record is None:
            failed = [r for r in records.values() if not r["ok"]]
            pytest.fail(
                f"{name} did not run in rank {rank} (exit status {completed.returncode}); "
                f"failed before it: {failed!r}; stderr: {completed.stderr[-2000:]}"
            )
        assert record["ok"], f"rank {rank}:\n{record['error']}"


def test_job_ran_every_check_and_exited_cleanly(job):
    records, completed = job
    assert completed.returncode == 0, completed.stderr
    assert sorted({name for name, _ in records}) == sorted(CHECK_NAMES)


def test_example_runs_under_mpiexec():
    completed = run_job(EXAMPLE)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert any(line.startswith("rank 1 received") for line in lines), completed.stdout
    assert any("zero-copy" in line for line in lines), completed.stdout
