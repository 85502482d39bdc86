"""dlbridge tensors as mpi4py message buffers and objects, run by python/tests/interop/
test_mpi4py.py under `mpiexec -n 2` (two ranks of one machine).

Each check runs in both ranks, in order, and writes one JSON line per rank,
`{"check": NAME, "rank": R, "ok": true}`, to DIR/rank<R>.jsonl with `--report DIR` (to stdout
without). A check that fails writes its error and aborts the whole job
(`MPI.COMM_WORLD.Abort`), so that the other rank is never left waiting for a message that will
not come. Refusals (read-only, strided buffers) are tested where a refusal
cannot leave a peer waiting: on `MPI.COMM_SELF`, or by a receiver that is refused and then
receives into a valid buffer the message its peer sent.

Zero-copy is checked by address: the address mpi4py takes for a buffer (`MPI.buffer`, the
same lookup as for messages: the buffer protocol, then `__dlpack__`) is the tensor's data
pointer, which is NumPy's or PyTorch's; received data is read through NumPy's or PyTorch's
own array.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import traceback

import numpy as np
import torch
from mpi4py import MPI
from mpi4py.util import pkl5

import dlbridge

COMM = MPI.COMM_WORLD
RANK = COMM.Get_rank()
PEER = 1 - RANK
IS_COPIED = dlbridge.FLAG_IS_COPIED
CHECKS = []
INT4_BYTES = b"\x21\x03"


def check(function):
    CHECKS.append(function)
    return function


def address(buffer, *, writable: bool = False) -> int:
    """The address mpi4py reads (or writes, `writable`) for a message buffer."""
    return MPI.buffer.frombuffer(buffer, readonly=not writable).address


def over_numpy(array: np.ndarray) -> dlbridge.Tensor:
    t = dlbridge.from_dlpack(array)
    assert t.data_ptr == array.ctypes.data
    assert address(t, writable=array.flags.writeable) == t.data_ptr
    return t


def over_torch(tensor: torch.Tensor) -> dlbridge.Tensor:
    t = dlbridge.from_dlpack(tensor)
    assert t.data_ptr == tensor.data_ptr()
    assert address(t, writable=True) == t.data_ptr
    return t


def refused(operation, *fragments: str) -> None:
    """`operation()` must raise BufferError naming one of `fragments`; a request it started
    by mistake is cancelled, so that no rank waits for it."""
    try:
        request = operation()
    except BufferError as error:
        text = str(error)
        assert any(f in text for f in fragments), f"unexpected refusal: {text!r}"
        return
    if isinstance(request, MPI.Request):
        request.Cancel()
        request.Wait()
    raise AssertionError(f"{operation} was not refused")


# --------------------------------------------------------------------------------------------
# message buffers: point to point, broadcast, reduction
# --------------------------------------------------------------------------------------------


@check
def send_recv_numpy():
    if RANK == 0:
        COMM.Send(over_numpy(np.arange(1000, dtype=np.float64)), dest=1, tag=1)
    else:
        received = np.zeros(1000, dtype=np.float64)
        COMM.Recv(over_numpy(received), source=0, tag=1)
        np.testing.assert_array_equal(received, np.arange(1000))


@check
def send_recv_torch():
    if RANK == 0:
        COMM.Send(over_torch(torch.arange(64, dtype=torch.int32).reshape(8, 8)), dest=1, tag=2)
    else:
        received = torch.zeros(8, 8, dtype=torch.int32)
        COMM.Recv(over_torch(received), source=0, tag=2)
        assert torch.equal(received, torch.arange(64, dtype=torch.int32).reshape(8, 8))


@check
def send_recv_bfloat16():
    # bfloat16 has no MPI type of its own: dlbridge's buffer serves it as uint16 ("H"), which
    # moves its bits unchanged.
    values = torch.linspace(-4, 4, 17, dtype=torch.bfloat16)
    if RANK == 0:
        COMM.Send(over_torch(values.clone()), dest=1, tag=3)
    else:
        received = torch.zeros(17, dtype=torch.bfloat16)
        COMM.Recv(over_torch(received), source=0, tag=3)
        assert torch.equal(received, values)


@check
def bcast_numpy_and_torch():
    array = np.arange(10, dtype=np.int64) if RANK == 0 else np.zeros(10, dtype=np.int64)
    COMM.Bcast(over_numpy(array), root=0)
    np.testing.assert_array_equal(array, np.arange(10))
    tensor = torch.full((3, 5), 7.5) if RANK == 1 else torch.zeros(3, 5)
    COMM.Bcast(over_torch(tensor), root=1)
    assert torch.equal(tensor, torch.full((3, 5), 7.5))


@check
def allreduce_numpy_and_torch():
    mine = np.full(6, RANK + 1, dtype=np.float32)
    total = np.zeros(6, dtype=np.float32)
    COMM.Allreduce(over_numpy(mine), over_numpy(total), op=MPI.SUM)
    np.testing.assert_array_equal(total, np.full(6, 3.0))
    mine_t = torch.full((2, 3), RANK + 1, dtype=torch.float64)
    total_t = torch.zeros(2, 3, dtype=torch.float64)
    COMM.Allreduce(over_torch(mine_t), over_torch(total_t), op=MPI.PROD)
    assert torch.equal(total_t, torch.full((2, 3), 2.0, dtype=torch.float64))


@check
def allreduce_in_place_numpy_and_torch():
    array = np.arange(5, dtype=np.int32) * (RANK + 1)
    COMM.Allreduce(MPI.IN_PLACE, over_numpy(array), op=MPI.SUM)
    np.testing.assert_array_equal(array, np.arange(5) * 3)
    tensor = torch.arange(4, dtype=torch.float32) + RANK
    COMM.Allreduce(MPI.IN_PLACE, over_torch(tensor), op=MPI.MAX)
    assert torch.equal(tensor, torch.arange(4, dtype=torch.float32) + 1)


# --------------------------------------------------------------------------------------------
# refusals: read-only and strided tensors
# --------------------------------------------------------------------------------------------


@check
def read_only_tensor_refused_as_a_receive_buffer():
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    t = dlbridge.from_dlpack(frozen)
    assert t.readonly
    not_writable = ("read-only", "not writable")
    refused(lambda: MPI.COMM_SELF.Irecv(t, source=0, tag=4), *not_writable)
    refused(lambda: MPI.COMM_SELF.Allreduce(MPI.IN_PLACE, t), *not_writable)
    refused(lambda: MPI.COMM_SELF.Scatter(np.zeros(4), t, root=0), *not_writable)
    # Reading it is allowed: sent to itself, received into writable memory.
    source = np.arange(4.0)
    source.flags.writeable = False
    target = np.zeros(4)
    MPI.COMM_SELF.Sendrecv(dlbridge.from_dlpack(source), 0, 5, over_numpy(target), 0, 5)
    np.testing.assert_array_equal(target, source)


@check
def refused_receive_leaves_the_message_for_a_valid_one():
    # Rank 1 is refused before anything is posted; rank 0's message waits for the valid
    # receive that follows, and neither rank hangs.
    if RANK == 0:
        COMM.Send(over_numpy(np.arange(3.0)), dest=1, tag=6)
    else:
        frozen = np.zeros(3)
        frozen.flags.writeable = False
        refused(lambda: COMM.Recv(dlbridge.from_dlpack(frozen), source=0, tag=6), "writable")
        received = np.zeros(3)
        COMM.Recv(over_numpy(received), source=0, tag=6)
        np.testing.assert_array_equal(received, np.arange(3.0))


@check
def strided_tensor_refused():
    strided = dlbridge.from_dlpack(np.arange(10.0)[::2])
    transposed = dlbridge.from_dlpack(torch.arange(12.0).reshape(3, 4)[:, 1:])
    not_contiguous = ("contiguous",)
    for t in (strided, transposed):
        refused(lambda t=t: MPI.COMM_SELF.Isend(t, dest=0, tag=7), *not_contiguous)
        refused(lambda t=t: MPI.COMM_SELF.Irecv(t, source=0, tag=7), *not_contiguous)
        refused(lambda t=t: MPI.COMM_SELF.Allreduce(MPI.IN_PLACE, t), *not_contiguous)
    # A compact copy goes.
    copy = strided.copy()
    target = np.zeros(5)
    MPI.COMM_SELF.Sendrecv(copy, 0, 8, over_numpy(target), 0, 8)
    np.testing.assert_array_equal(target, np.arange(10.0)[::2])


# --------------------------------------------------------------------------------------------
# the object API: pickle protocol 5
# --------------------------------------------------------------------------------------------


@check
def object_send_recv():
    frozen = np.arange(6, dtype=np.int16)
    frozen.flags.writeable = False
    if RANK == 0:
        COMM.send(dlbridge.from_dlpack(np.arange(12.0).reshape(3, 4)), dest=1, tag=9)
        COMM.send(dlbridge.from_dlpack(frozen), dest=1, tag=9)
        COMM.send(dlbridge.arange(5, "bfloat16"), dest=1, tag=9)
        packed = dlbridge.zeros(3, "int4")  # 1, 2, 3: two elements a byte
        ctypes.memmove(packed.data_ptr, INT4_BYTES, 2)
        COMM.send(packed, dest=1, tag=9)
    else:
        t = COMM.recv(source=0, tag=9)
        assert isinstance(t, dlbridge.Tensor) and t.shape == (3, 4) and not t.readonly
        assert not t.flags & IS_COPIED  # rebuilt over the bytes pickle read, not copied again
        np.testing.assert_array_equal(np.from_dlpack(t), np.arange(12.0).reshape(3, 4))
        r = COMM.recv(source=0, tag=9)
        assert r.readonly and r.dtype == "int16"
        np.testing.assert_array_equal(np.from_dlpack(r), frozen)
        b = COMM.recv(source=0, tag=9)
        assert b.dtype == "bfloat16"
        assert torch.equal(torch.from_dlpack(b), torch.arange(5, dtype=torch.bfloat16))
        # Packed sub-byte elements travel exactly by pickle (as message buffers, mpi4py 4.1
        # would size them at a byte per element).
        packed = COMM.recv(source=0, tag=9)
        assert packed.dtype == "int4" and packed.shape == (3,) and packed.nbytes == 2
        assert ctypes.string_at(packed.data_ptr, 2) == INT4_BYTES


@check
def pkl5_out_of_band_zero_copy():
    # pkl5 sends buffers past MPI.pickle.THRESHOLD (256 KiB) out-of-band, as MPI messages.
    n = 1 << 16  # 512 KiB of float64
    values = np.arange(n, dtype=np.float64)
    comm = pkl5.Intracomm(COMM)
    if RANK == 0:
        t = over_numpy(values)
        data, buffers = pkl5.pickle.dumps_oob(t)
        assert len(data) < 1024 and len(buffers) == 1
        assert MPI.buffer(buffers[0]).address == t.data_ptr  # the send reads NumPy's memory
        comm.send(t, dest=1, tag=10)
        frozen = values.copy()
        frozen.flags.writeable = False
        comm.send(dlbridge.from_dlpack(frozen), dest=1, tag=10)
    else:
        t = comm.recv(source=0, tag=10)
        assert not t.readonly and not t.flags & IS_COPIED  # over pkl5's receive buffer
        np.testing.assert_array_equal(np.from_dlpack(t), values)
        r = comm.recv(source=0, tag=10)
        assert r.readonly and not r.flags & IS_COPIED
        np.testing.assert_array_equal(np.from_dlpack(r), values)


@check
def pkl5_bcast():
    comm = pkl5.Intracomm(COMM)
    n = 1 << 16
    t = dlbridge.from_dlpack(torch.arange(n, dtype=torch.float64)) if RANK == 0 else None
    t = comm.bcast(t, root=0)
    assert torch.equal(torch.from_dlpack(t), torch.arange(n, dtype=torch.float64))


def main() -> int:
    """Runs every check in order; `--report DIR` writes each rank's lines to
    DIR/rank<R>.jsonl (stdout otherwise)."""
    if COMM.Get_size() != 2:
        print(f"run with mpiexec -n 2 (size is {COMM.Get_size()})", file=sys.stderr)
        return 2
    report = sys.stdout
    if "--report" in sys.argv:
        folder = sys.argv[sys.argv.index("--report") + 1]
        report = open(os.path.join(folder, f"rank{RANK}.jsonl"), "w", encoding="utf-8")  # noqa: SIM115
    for function in CHECKS:
        record = {"check": function.__name__, "rank": RANK, "ok": True}
        try:
            function()
        except BaseException as error:  # noqa: BLE001 - any failure must abort both ranks
            record["ok"] = False
            record["error"] = "".join(traceback.format_exception(error))
        print(json.dumps(record), file=report, flush=True)
        if not record["ok"]:
            COMM.Abort(1)
            return 1
        COMM.Barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
