"""dlbridge as Dask's serializer on a real LocalCluster (two worker processes, each with a
nanny): the catalogue's tensors of NumPy, PyTorch, JAX and dlbridge through scatter/gather,
task arguments and results, and from one worker to the other; the registration on every
worker (a plugin); zero-copy, writable views over Dask's frames; a worker killed while
holding tensors (restarted by its nanny, the task retried, the client's memory flat);
corrupted frames. Runs in a process of its own.
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
from _helpers import collect, rss_bytes  # noqa: E402

distributed = import_framework("distributed", "distributed")

KINDS = ("numpy", "torch", "jax", "dlbridge")


@pytest.fixture(scope="module")
def client():
    tests = os.path.dirname(HERE)
    path = os.pathsep.join([HERE, tests, os.environ.get("PYTHONPATH", "")])
    os.environ["PYTHONPATH"] = path  # the worker processes import _cases
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    assert dd.register(*KINDS, ray=False, client=client) == list(KINDS)
    yield client
    client.close()
    cluster.close()


def workers(client) -> list[str]:
    return sorted(client.scheduler_info()["workers"])


def test_every_worker_registered_dlbridge(client):
    assert len(workers(client)) == 2
    kinds = client.run(_cases.registered_kinds)
    assert len(kinds) == 2 and all(each == sorted(KINDS) for each in kinds.values()), kinds
    from distributed.protocol import serialize

    for x in (np.ones(3), dlbridge.zeros(2)):
        header, _ = serialize(x, serializers=("dask",))
        assert header["sub-header"]["dlbridge"]["format"] == "dlbridge.frame"


def test_catalogue_through_scatter_gather_tasks_and_between_workers(client):
    cases = _cases.sendable_cases()
    names = [name for name, _ in cases]
    tensors = [x for _, x in cases]
    expected = [_cases.contents(x) for x in tensors]
    # As test_ray.py: the catalogue is not empty (73 cases today) and has every kind.
    assert len(cases) > 60 and {name.split("-")[0] for name in names} == set(KINDS), names
    first, second = workers(client)
    futures = client.scatter(tensors, workers=[first])
    assert [_cases.contents(x) for x in client.gather(futures)] == expected
    # Read on the other worker: each tensor goes from one worker to the other.
    seen = client.submit(_cases.describe_all, futures, workers=[second]).result()
    assert seen == expected, [n for n, a, b in zip(names, seen, expected) if a != b]
    # Results: the other worker's, gathered here. (Tensors given to `submit` directly travel
    # inside the task, pickled by Dask, not by a serializer family: data goes as futures.)
    echoed = client.submit(_cases.echo, futures, workers=[second], pure=False).result()
    assert [_cases.contents(x) for x in echoed] == expected


def test_frames_dask_delivers_are_writable_so_tensors_are_views(client):
    torch = import_framework("torch", "torch")
    result = client.submit(lambda n: torch.arange(n, dtype=torch.float32), 2**20).result()
    assert result.is_contiguous() and result[-1] == 2**20 - 1
    # Large and small: each tensor's frame is read into memory of its own (aligned).
    for count in (10, 1000, 2**20):
        t = client.submit(dlbridge.arange, count, "int64").result()
        rebuilt = dlbridge.explain(t)["rebuilt"]
        assert rebuilt["from"] == "frame" and rebuilt["shared"] and not t.readonly, rebuilt
    a = np.arange(8.0)
    a.flags.writeable = False
    [future] = client.scatter([a])
    assert not future.result().flags.writeable  # read-only when sent stays read-only


def test_a_worker_killed_holding_tensors_is_retried_and_the_client_does_not_grow(client, tmp_path):
    import_framework("torch", "torch")
    expected = [_cases.contents(x) for x in _cases.big_tensors()]
    sizes = []
    for attempt in range(4):
        marker = str(tmp_path / f"killed-{attempt}")
        # Made on a worker (so that Dask can make them again when their worker dies), read
        # here, then held by the task that kills its worker.
        made = client.submit(_cases.big_tensors, pure=False)
        assert [_cases.contents(x) for x in made.result()] == expected
        future = client.submit(_cases.die_on_first_attempt, marker, made, pure=False)
        assert future.result(timeout=120) == expected
        assert os.path.exists(marker)
        del future, made
        collect()
        sizes.append(rss_bytes())
    client.wait_for_workers(2, timeout=60)
    assert sizes[-1] - sizes[1] < 16 * 2**20, sizes


def test_corrupted_frames_are_clear_errors():
    from distributed.protocol import deserialize, serialize

    header, frames = serialize(np.arange(6, dtype=np.int32), serializers=("dask",))
    assert [memoryview(frame).nbytes for frame in frames] == [0, 24]
    empty, data = b"", bytes(frames[1])
    with pytest.raises(ValueError, match="data holds 23 bytes, its header says 24"):
        deserialize(header, [empty, data[:23]])
    ours = header["sub-header"]["dlbridge"]
    bad = dict(header, **{"sub-header": {"dlbridge": dict(ours, dtype="int64")}})
    with pytest.raises(ValueError, match="'nbytes' is 24, but a int64 tensor"):
        deserialize(bad, [empty, data])
    with pytest.raises(ValueError, match="without dlbridge's header entry"):
        deserialize(dict(header, **{"sub-header": {"dlbridge": None}}), [empty, data])
    with pytest.raises(ValueError, match="an empty frame and the tensor's, got 1 frames"):
        deserialize(header, [data])


def test_default_registration_covers_frameworks_imported_later_and_leaves_subclasses():
    # In a fresh process: `register()` with no types registers what is imported (NumPy,
    # dlbridge), and PyTorch when Dask first meets one of its tensors; a subclass (a
    # Parameter, a masked array) goes to Dask's other serializers, whole.
    code = """
import dlbridge.distributed as dd
assert dd.register(ray=False) == ["numpy", "dlbridge"], dd._REGISTERED
import numpy as np, torch
from distributed.protocol import deserialize, serialize
header, frames = serialize(torch.arange(3.0), serializers=("dask",))
assert header["sub-header"]["dlbridge"]["kind"] == "torch"
assert torch.equal(deserialize(header, frames), torch.arange(3.0))
header, frames = serialize(torch.nn.Parameter(torch.ones(2)), serializers=("dask", "pickle"))
assert header["serializer"] == "pickle"
assert isinstance(deserialize(header, frames), torch.nn.Parameter)
masked = np.ma.masked_array([1.0, 2.0], mask=[False, True])
header, frames = serialize(masked, serializers=("dask", "pickle"))
assert "dlbridge" not in header.get("sub-header", {})
assert deserialize(header, frames).mask.tolist() == [False, True]
print("ok")
"""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
