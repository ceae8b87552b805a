"""An index the machine cannot hold is refused up front, with the estimate."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchstream.config.settings import EmbeddedSettings, GraphSettings, Settings, VectorSettings
from patchstream.errors import CapacityError
from patchstream.indexing.capacity import available_mib, check_capacity, estimate, stack_is_local


def _proc(tmp_path: Path, available_kb: int) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "meminfo").write_text(
        f"MemTotal:       24000000 kB\nMemFree:         1000000 kB\n"
        f"MemAvailable:   {available_kb} kB\n"
    )
    return proc


def test_available_memory_is_the_kernels_or_the_cgroups_smaller(tmp_path: Path) -> None:
    proc = _proc(tmp_path, 8 * 1024 * 1024)  # 8 GiB
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    assert available_mib(proc, cgroup) == 8192  # no cgroup files: the kernel's figure
    (cgroup / "memory.max").write_text("max\n")
    (cgroup / "memory.current").write_text(str(2**30))
    assert available_mib(proc, cgroup) == 8192  # no limit
    (cgroup / "memory.max").write_text(str(3 * 2**30))
    assert available_mib(proc, cgroup) == 2048  # 3 GiB limit, 1 GiB used
    (cgroup / "memory.current").write_text(str(4 * 2**30))
    assert available_mib(proc, cgroup) == 0
    assert available_mib(tmp_path / "none", tmp_path / "none") == float("inf")


def test_the_estimate_scales_with_the_source_added_and_says_what_to_do() -> None:
    small = estimate(20_000_000, 60.0, 8192)
    assert small.needed_mib == pytest.approx(1200) and small.fits
    big = estimate(300_000_000, 60.0, 8192)
    assert big.needed_mib == pytest.approx(18000) and not big.fits
    message = big.refusal()
    assert "300 MB" in message and "18,000 MiB" in message and "8,192 MiB" in message
    assert "PATCHSTREAM_EMBEDDED__MEMORY_CHECK=false" in message
    assert not estimate(7_500_000, 1000.0, 8192).fits  # 7,500 MiB > 90% of 8,192


def test_only_a_stack_on_this_machine_is_checked() -> None:
    assert stack_is_local(Settings())
    assert stack_is_local(Settings(graph=GraphSettings(falkordb_host="::1")))
    assert not stack_is_local(Settings(graph=GraphSettings(falkordb_host="10.0.0.5")))
    assert not stack_is_local(Settings(graph=GraphSettings(falkordb_host="graph.internal")))
    assert not stack_is_local(Settings(graph=GraphSettings(backend="memgraph")))
    assert not stack_is_local(Settings(vector=VectorSettings(milvus_uri="http://milvus:19530")))
    for uri in ("unix:/data/milvus.sock", "http://127.0.0.1:19630", "http://localhost:1"):
        assert stack_is_local(Settings(vector=VectorSettings(milvus_uri=uri))), uri


def test_check_capacity_refuses_or_steps_aside() -> None:
    huge = Settings(embedded=EmbeddedSettings(memory_mib_per_source_mb=1e9))
    with pytest.raises(CapacityError, match="needs about"):
        check_capacity(huge, 1_000_000)
    assert check_capacity(huge, 0) is None  # an unchanged re-index adds nothing
    off = Settings(embedded=EmbeddedSettings(memory_mib_per_source_mb=1e9, memory_check=False))
    assert check_capacity(off, 1_000_000) is None
    remote = huge.model_copy(update={"vector": VectorSettings(milvus_uri="http://m:19530")})
    assert check_capacity(remote, 1_000_000) is None
    found = check_capacity(Settings(), 1_000_000)
    assert found is not None and found.fits and found.needed_mib == pytest.approx(60)
