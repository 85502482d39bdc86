"""Tensors of NumPy, PyTorch and JAX through Ray's object store and Dask's workers, with
dlbridge as the serializer (`dlbridge.distributed`): part of `make tour`.

    .venv/bin/python python/examples/distributed_exchange.py
"""

import os

os.environ.setdefault("RAY_DEDUP_LOGS", "0")

import jax.numpy as jnp
import numpy as np
import ray
import torch

import dlbridge
import dlbridge.distributed as dd
from distributed import Client, LocalCluster

KINDS = ("numpy", "torch", "jax", "dlbridge")


def where(x) -> str:
    t = dlbridge.from_dlpack(x) if not isinstance(x, dlbridge.Tensor) else x
    return f"{type(x).__module__}.{type(x).__name__} at {t.data_ptr:#x}, read-only: {t.readonly}"


def main() -> None:
    print("== Ray: one node, an object store in shared memory")
    ray.init(
        num_cpus=1,
        include_dashboard=False,
        logging_level="ERROR",
        object_store_memory=128 * 2**20,
        runtime_env={"worker_process_setup_hook": dd.ray_setup_hook(*KINDS)},
    )
    print("registered with Ray for", dd.register_ray(*KINDS))
    # Made after Ray has started its processes (JAX's threads and fork do not mix).
    tensors = {
        "numpy": np.arange(1 << 16, dtype=np.float32),
        "torch": torch.arange(1 << 16, dtype=torch.bfloat16),
        "jax": jnp.arange(1 << 16, dtype=jnp.float32),
    }
    for name, x in tensors.items():
        reference = ray.put(x)
        first, second = ray.get(reference), ray.get(reference)
        same = dlbridge.from_dlpack(first).data_ptr == dlbridge.from_dlpack(second).data_ptr
        print(f"  {name:6} -> {where(first)}; two gets share memory (a view of the store): {same}")
    t = ray.get(ray.put(dlbridge.from_dlpack(tensors["numpy"])))
    print("  explain:", dlbridge.explain(t)["rebuilt"]["reason"])

    @ray.remote
    def total(x):
        return f"{type(x).__name__} of sum {float(x.sum())}, writeable: {x.flags.writeable}"

    print("  a task's argument, rebuilt in a worker:", ray.get(total.remote(tensors["numpy"])))
    ray.shutdown()

    print("== Dask: a LocalCluster of two worker processes")
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=50,
        ) as cluster,
        Client(cluster) as client,
    ):
        print(
            "registered with Dask (here and on every worker) for",
            dd.register(*KINDS, ray=False, client=client),
        )
        for name, x in tensors.items():
            [future] = client.scatter([x])
            back = future.result()
            print(f"  {name:6} -> {where(back)}")
        made = client.submit(dlbridge.arange, 1000, "int64").result()
        print("  explain:", dlbridge.explain(made)["rebuilt"]["reason"])

    print("== A device tensor is refused on the sender (frames carry host memory)")
    try:
        from dlbridge.check.records import make_managed

        cuda = dlbridge.from_dlpack(
            make_managed((4,), "float32", device=(2, 0), data=0x1000).capsule()
        )
        dd.serialize(cuda)
    except TypeError as error:
        print("  TypeError:", error)


if __name__ == "__main__":
    main()
