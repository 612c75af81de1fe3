"""The GPU engine's free and total memory where an external memory manager (RMM's, as cuDF
and dask-cuda install in a Dask worker) does not tell: the driver is asked."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bamql.gpu.engine import memory_info


def _cuda(answer):
    def get_memory_info():
        if isinstance(answer, Exception):
            raise answer
        return answer

    return SimpleNamespace(current_context=lambda: SimpleNamespace(get_memory_info=get_memory_info))


def test_the_context_tells():
    assert memory_info(_cuda((3, 8))) == (3, 8)


def test_a_memory_manager_that_does_not_tell_leaves_it_to_the_driver(monkeypatch):
    try:
        from numba.cuda.cudadrv import driver as drv
    except Exception as e:  # the CUDA simulator has no driver module
        pytest.skip(f"numba's CUDA driver module is not importable here: {e}")
    monkeypatch.setattr(drv, "driver", SimpleNamespace(cuMemGetInfo=lambda: (5, 80)))
    assert memory_info(_cuda(NotImplementedError())) == (5, 80)


def test_the_simulators_infinite_memory_is_kept():
    """numba's CUDA simulator tells ``inf`` bytes free: converting it to int raised
    OverflowError, so every GPU session in the simulator failed to open (found by
    ``tests.sql.fuzz --device gpu`` under NUMBA_ENABLE_CUDASIM)."""
    inf = float("inf")
    assert memory_info(_cuda((inf, inf))) == (inf, inf)
