#!/usr/bin/env python3
"""Large tensors through Ray and Dask: Ray's and Dask's own paths beside dlbridge's
serializer (dlbridge.distributed), in one run, interleaved round by round.

Run with the project's environment: `make bench-distributed` (or, after `make
python-build`, `.venv/bin/python benches/distributed_transfer.py`). A float32 tensor of 256 MiB
(DLBRIDGE_BENCH_MIB) goes, for each path:

- Ray, one node: `ray.put` then `ray.get` in this process (a Ray cluster of two nodes made
  by `ray.cluster_utils.Cluster` on this machine, each with an object store of its own);
- Ray, two nodes: `ray.put` here, `ray.get` in an actor on the other node (the object moves
  from one store to the other): the actor's time and its memory;
- Dask: `client.scatter` to a worker of a `LocalCluster` (two worker processes), then
  `future.result()` back here.

The paths: NumPy's and PyTorch's own (Ray's and Dask's serializers, dlbridge unregistered),
and dlbridge's serializer on NumPy, PyTorch and JAX tensors. Each cell is the median over
DLBRIDGE_BENCH_ROUNDS rounds (default 7) and the peak resident memory the step added in the
process that did it (Linux: VmHWM, reset before each step through /proc/self/clear_refs),
in MiB, beyond what it held before. Prints a Markdown table; the machine and versions first.
DLBRIDGE_BENCH_ONLY=ray or =dask runs one transport.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import platform
import statistics
import sys
import time

import numpy as np

import dlbridge
import dlbridge.distributed as dd

MIB = int(os.environ.get("DLBRIDGE_BENCH_MIB", "256"))
ROUNDS = int(os.environ.get("DLBRIDGE_BENCH_ROUNDS", "7"))
COUNT = MIB * 2**20 // 4
PATHS = ["numpy (own)", "torch (own)", "dlbridge: numpy", "dlbridge: torch", "dlbridge: jax"]


def memory() -> tuple[int, int]:
    """(resident, peak resident) bytes of this process."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["VmHWM"]


def reset_peak() -> int:
    """Resets the peak resident memory to the current one (Linux 4.0+); returns it."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    return memory()[0]


def measured(step):
    """(seconds, peak MiB added, result) of `step()`."""
    before = reset_peak()
    start = time.perf_counter()
    result = step()
    seconds = time.perf_counter() - start
    added = (memory()[1] - before) / 2**20
    return seconds, added, result


def make(path: str):
    """The 256 MiB float32 tensor of a path, made once."""
    if "jax" in path:
        import jax.numpy as jnp

        x = jnp.arange(COUNT, dtype=jnp.float32)
        x.block_until_ready()
        return x
    if "torch" in path:
        import torch

        return torch.arange(COUNT, dtype=torch.float32)
    return np.arange(COUNT, dtype=np.float32)


def first_last(x) -> tuple[float, float]:
    """Reads the tensor's two ends (a check that it arrived, touching little)."""
    t = dlbridge.from_dlpack(x) if not isinstance(x, dlbridge.Tensor) else x
    view = np.from_dlpack(t)
    return float(view[0]), float(view[-1])


# -- Ray ----------------------------------------------------------------------------------------


def ray_toggle(path: str) -> None:
    """dlbridge registered for the path's type with Ray here, or Ray's own serializer."""
    import ray.util
    import torch

    for cls in (np.ndarray, torch.Tensor):
        with contextlib.suppress(Exception):  # not registered
            ray.util.deregister_serializer(cls)
    if path.startswith("dlbridge"):
        dd.register_ray(path.split(": ")[1])


class Fetcher:
    """An actor on the other node: gets an object from its store, timing it."""

    def fetch(self, references):
        import ray

        before = reset_peak()
        start = time.perf_counter()
        x = ray.get(references[0])
        seconds = time.perf_counter() - start
        added = (memory()[1] - before) / 2**20
        ends = first_last(x)
        del x
        return seconds, added, ends


def bench_ray(results: dict) -> None:
    import ray
    from ray.cluster_utils import Cluster

    store = max(3 * MIB, 512) * 2**20
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "object_store_memory": store,
            "include_dashboard": False,
        },
    )
    cluster.add_node(num_cpus=1, object_store_memory=store, resources={"other_node": 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="ERROR")
    fetcher = ray.remote(resources={"other_node": 1}, num_cpus=0)(Fetcher).remote()
    tensors = {path: make(path) for path in PATHS}
    for round_ in range(ROUNDS + 1):  # the first round warms up, and is not counted
        for path in PATHS:
            ray_toggle(path)
            x = tensors[path]
            put_s, put_mib, reference = measured(functools.partial(ray.put, x))
            get_s, get_mib, got = measured(functools.partial(ray.get, reference))
            assert first_last(got) == first_last(x), path
            del got
            far_s, far_mib, ends = ray.get(fetcher.fetch.remote([reference]))
            assert ends == first_last(x), path
            del reference
            if round_:
                for key, value in (
                    ("ray put", (put_s, put_mib)),
                    ("ray get, one node", (get_s, get_mib)),
                    ("ray get, other node", (far_s, far_mib)),
                ):
                    results.setdefault((key, path), []).append(value)
    ray.shutdown()
    cluster.shutdown()


# -- Dask ---------------------------------------------------------------------------------------


def dask_toggle(path: str) -> None:
    """dlbridge registered for the path's type with Dask in this process (and the workers),
    or Dask's own serializers."""
    import torch
    from distributed.protocol.serialize import dask_deserialize, dask_serialize

    for cls in (np.ndarray, torch.Tensor):
        for dispatch in (dask_serialize, dask_deserialize):
            dispatch._lookup.pop(cls, None)
    # Dask's own registrations, made again (they are lazy, per module).
    from importlib import reload

    import distributed.protocol.numpy
    import distributed.protocol.torch

    reload(distributed.protocol.numpy)
    reload(distributed.protocol.torch)
    if path.startswith("dlbridge"):
        dd.register_dask(path.split(": ")[1])


def bench_dask(results: dict) -> None:
    import distributed

    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=50,
        memory_limit=0,
    )
    client = distributed.Client(cluster)
    worker = min(client.scheduler_info()["workers"])
    tensors = {path: make(path) for path in PATHS}
    for round_ in range(ROUNDS + 1):
        for path in PATHS:
            dask_toggle(path)
            client.run(dask_toggle, path)
            x = tensors[path]
            scatter_s, scatter_mib, futures = measured(
                functools.partial(client.scatter, [x], workers=[worker], hash=False)
            )
            gather_s, gather_mib, got = measured(futures[0].result)
            assert first_last(got) == first_last(x), path
            del got, futures
            if round_:
                results.setdefault(("dask scatter", path), []).append((scatter_s, scatter_mib))
                results.setdefault(("dask gather", path), []).append((gather_s, gather_mib))
    client.close()
    cluster.close()


def table(results: dict) -> str:
    steps = []
    for step, _ in results:
        if step not in steps:
            steps.append(step)
    lines = [
        "| step | " + " | ".join(PATHS) + " |",
        "|---|" + "---|" * len(PATHS),
    ]
    for step in steps:
        cells = []
        for path in PATHS:
            runs = results.get((step, path), [])
            if not runs:
                cells.append("-")
                continue
            ms = statistics.median(seconds for seconds, _ in runs) * 1000
            mib = statistics.median(added for _, added in runs)
            cells.append(f"{ms:,.1f} ms, {mib:+,.0f} MiB")
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    import jax
    import ray
    import torch

    import distributed

    print(
        f"{MIB} MiB float32, median of {ROUNDS} interleaved rounds; peak memory the step "
        "added in the process that did it (VmHWM). "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, ray {ray.__version__}, distributed "
        f"{distributed.__version__}, numpy {np.__version__}, torch {torch.__version__}, "
        f"jax {jax.__version__}, dlbridge {dlbridge.__version__}\n"
    )
    results: dict = {}
    only = os.environ.get("DLBRIDGE_BENCH_ONLY", "")
    if only in ("", "ray"):
        bench_ray(results)
    if only in ("", "dask"):
        bench_dask(results)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
