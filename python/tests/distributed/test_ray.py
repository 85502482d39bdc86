"""dlbridge as Ray's serializer on a real multi-node cluster (ray.cluster_utils.Cluster: two
raylets with an object store each, on this machine): the catalogue's tensors of NumPy,
PyTorch, JAX and dlbridge through put/get, task arguments and results and an actor on the
other node; zero-copy reads from the store; a worker killed while holding tensors (retried,
the driver's memory flat); corrupted frames in the store. Runs in a process of its own.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import dlbridge
import dlbridge.distributed as dd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _cases  # noqa: E402

from _frameworks import import_framework  # noqa: E402
from _helpers import collect, np_address, rss_bytes  # noqa: E402

ray = import_framework("ray", "ray")

KINDS = ("numpy", "torch", "jax", "dlbridge")
STORE = 256 * 2**20


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "object_store_memory": STORE,
            "resources": {"head": 1},
            "include_dashboard": False,
        },
    )
    cluster.add_node(num_cpus=1, object_store_memory=STORE, resources={"other_node": 1})
    cluster.wait_for_nodes()
    tests = os.path.dirname(HERE)
    ray.init(
        address=cluster.address,
        logging_level="ERROR",
        runtime_env={
            "worker_process_setup_hook": dd.ray_setup_hook(*KINDS),
            "env_vars": {"PYTHONPATH": os.pathsep.join([HERE, tests])},
        },
    )
    assert dd.register_ray(*KINDS) == list(KINDS)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def on_other_node(function, **options):
    return ray.remote(resources={"other_node": 1}, num_cpus=0, **options)(function)


def test_the_cluster_has_two_nodes_with_object_stores_of_their_own(cluster):
    nodes = [node for node in ray.nodes() if node["Alive"]]
    assert len(nodes) == 2
    assert len({node["ObjectStoreSocketName"] for node in nodes}) == 2
    here = ray.get_runtime_context().get_node_id()
    there = ray.get(on_other_node(lambda: ray.get_runtime_context().get_node_id()).remote())
    assert there != here
    # The workers registered dlbridge (the setup hook).
    assert ray.get(on_other_node(_cases.registered_kinds).remote()) == sorted(KINDS)


def test_catalogue_through_put_get_tasks_and_an_actor_on_the_other_node(cluster):
    cases = _cases.sendable_cases()
    names = [name for name, _ in cases]
    tensors = [x for _, x in cases]
    expected = [_cases.contents(x) for x in tensors]
    assert len(cases) > 60 and {name.split("-")[0] for name in names} == set(KINDS)

    # put/get on this node.
    got = [ray.get(ray.put(x)) for x in tensors]
    assert [_cases.contents(x) for x in got] == expected
    # Task arguments read on the other node, and the same tensors as its results.
    seen = ray.get(on_other_node(_cases.describe_all).remote(tensors))
    assert seen == expected, [n for n, a, b in zip(names, seen, expected) if a != b]
    back = ray.get(on_other_node(_cases.echo).remote(tensors))
    assert [_cases.contents(x) for x in back] == expected
    # An object put here, read there by reference (it crosses object stores).
    reference = ray.put(tensors)
    assert ray.get(on_other_node(_cases.describe_all).remote(reference)) == expected
    # An actor on the other node keeps them and hands them back.
    holder = ray.remote(resources={"other_node": 1}, num_cpus=0)(Holder).remote()
    ray.get(holder.keep.remote(tensors))
    kept = ray.get(holder.give.remote())
    assert [_cases.contents(x) for x in kept] == expected
    ray.kill(holder)


class Holder:
    def keep(self, tensors):
        self.tensors = tensors

    def give(self):
        return self.tensors


def test_reads_from_the_store_are_zero_copy_and_read_only(cluster):
    a = np.arange(4 * 2**20, dtype=np.float32)
    reference = ray.put(a)
    first, second = ray.get(reference), ray.get(reference)
    assert not first.flags.writeable
    assert np_address(first) == np_address(second) != np_address(a)  # the store's memory
    np.testing.assert_array_equal(first, a)
    t = ray.get(ray.put(dlbridge.from_dlpack(a)))
    rebuilt = dlbridge.explain(t)["rebuilt"]
    assert rebuilt["from"] == "frame" and rebuilt["shared"] and t.readonly
    assert "read-only: the buffer is read-only" in rebuilt["reason"]
    torch = import_framework("torch", "torch")
    x = ray.get(ray.put(torch.ones(2**20)))
    x += 1  # a copy of its own (PyTorch has no read-only tensors): the store is untouched
    assert float(ray.get(ray.put(torch.ones(3))).sum()) == 3.0


def test_a_worker_killed_holding_tensors_is_retried_and_the_driver_does_not_grow(cluster, tmp_path):
    torch = import_framework("torch", "torch")
    tensors = [np.ones(2**20, dtype=np.float64), torch.arange(2**20), dlbridge.zeros(2**20)]
    expected = [_cases.contents(x) for x in tensors]
    task = on_other_node(_cases.die_on_first_attempt, max_retries=3)
    sizes = []
    for attempt in range(3):
        marker = str(tmp_path / f"killed-{attempt}")
        assert ray.get(task.remote(marker, tensors)) == expected
        assert os.path.exists(marker)  # the first attempt did die
        collect()
        sizes.append(rss_bytes())
    # 24 MiB of tensors go out each round: a leak of them would show as 24 MiB of growth.
    assert sizes[-1] - sizes[1] < 16 * 2**20, sizes


class ForgedFrame:
    """Pickles as dlbridge's Ray deserializer applied to a hand-made (corrupted) frame."""

    def __init__(self, header, data):
        self.header, self.data = header, data

    def __reduce__(self):
        return (dd._ray_deserialize, ((self.header, self.data),))


def test_corrupted_frames_in_the_store_are_clear_errors(cluster):
    header, frames = dd.serialize(np.arange(6, dtype=np.int32))
    data = bytes(frames[0].raw())
    for change, message in [
        ({"nbytes": 25}, "'nbytes' is 25"),
        ({"dtype": "float128"}, "'dtype' is \"float128\""),
        ({"shape": [7]}, "'nbytes' is 24, but a int32 tensor of shape \\[7\\]"),
    ]:
        bad = dict(header, **change)
        with pytest.raises(Exception, match=message):
            ray.get(ray.put(ForgedFrame(bad, data)))
    with pytest.raises(Exception, match="data holds 23 bytes, its header says 24"):
        ray.get(ray.put(ForgedFrame(header, data[:23])))


def test_tensors_alive_when_a_ray_driver_exits_end_quietly(cluster):
    # Ray frees objects from its own threads as the process ends, after the interpreter is
    # finalized: the deleter of a tensor over a store buffer must then leave the buffer alone
    # (it panicked, "the Python interpreter is not initialized", before issue 31).
    code = """
import numpy as np, ray, torch, dlbridge, dlbridge.distributed as dd
import sys
ray.init(address=sys.argv[1], logging_level="ERROR",
         runtime_env={"worker_process_setup_hook": dd.ray_setup_hook("numpy", "torch")})
dd.register_ray("numpy", "torch", "dlbridge")
kept = [ray.get(ray.put(x)) for x in (np.arange(1000.0), torch.arange(5.0),
                                      dlbridge.from_dlpack(np.arange(1000)))]
assert kept[2].readonly and dlbridge.explain(kept[2])["rebuilt"]["shared"]
double = ray.remote(lambda x: x * 2)
kept += ray.get([double.remote(torch.arange(4.0)), double.remote(np.arange(4.0))])
print("ok")
"""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code, cluster.address],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
    assert "panicked" not in done.stderr, done.stderr[-3000:]
