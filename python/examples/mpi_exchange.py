"""dlbridge tensors across processes with mpi4py: run it with two ranks,

    .venv/bin/mpiexec -n 2 .venv/bin/python python/examples/mpi_exchange.py

(MPICH's mpiexec from the `mpich` wheel, in .venv/bin). Rank 0 sends NumPy memory, rank 1
receives it straight into PyTorch memory, both seen through dlbridge tensors whose addresses
are the ones MPI reads and writes (zero-copy on both ends); then an in-place sum over both
ranks, and a whole tensor as a Python object (pickle protocol 5, its bytes out-of-band with
mpi4py.util.pkl5).
"""

import numpy as np
import torch
from mpi4py import MPI
from mpi4py.util import pkl5

import dlbridge

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
if comm.Get_size() != 2:
    raise SystemExit("run with two ranks: mpiexec -n 2 python python/examples/mpi_exchange.py")

# 1. Message buffers: NumPy memory on rank 0, PyTorch memory on rank 1.
if rank == 0:
    array = np.arange(8, dtype=np.float32) / 4
    tensor = dlbridge.from_dlpack(array)
    address = MPI.buffer(tensor).address
    assert address == tensor.data_ptr == array.ctypes.data
    print(f"rank 0 sends {array.tolist()} from NumPy memory at {address:#x} (zero-copy)")
    comm.Send(tensor, dest=1)
else:
    received = torch.zeros(8, dtype=torch.float32)
    tensor = dlbridge.from_dlpack(received)
    address = MPI.buffer.frombuffer(tensor, readonly=False).address
    assert address == tensor.data_ptr == received.data_ptr()
    comm.Recv(tensor, source=0)
    print(f"rank 1 received {received.tolist()} into PyTorch memory at {address:#x} (zero-copy)")
comm.Barrier()

# 2. A reduction in place: each rank's values are summed into its own memory.
mine = torch.full((4,), float(rank + 1))
comm.Allreduce(MPI.IN_PLACE, dlbridge.from_dlpack(mine), op=MPI.SUM)
results = comm.gather(mine.tolist(), root=0)  # one line per rank, printed by rank 0
if rank == 0:
    for r, values in enumerate(results):
        print(f"rank {r}: Allreduce(IN_PLACE, SUM) -> {values}")

# 3. Whole tensors as objects: dtype, shape and read-only-ness travel with the bytes.
big = pkl5.Intracomm(comm)  # buffers past 256 KiB go out-of-band, without a pickled copy
if rank == 0:
    frozen = np.arange(100_000, dtype=np.float64)
    frozen.flags.writeable = False
    big.send(dlbridge.from_dlpack(frozen), dest=1)
    comm.send(dlbridge.arange(4, "bfloat16"), dest=1)
else:
    t = big.recv(source=0)
    small = comm.recv(source=0)
    print(f"rank 1 received objects: {t!r}, sum {np.from_dlpack(t).sum():.0f}; {small!r}")
