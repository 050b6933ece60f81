"""The real GPU path (NOTE(targets) "cuda"): CuPy arrays and CUDA tensors through the
frontend, the kernels launched through CuPy. Every test here is skipped, with the
reason, where there is no CuPy or no GPU. On a GPU machine (docs/codegen.md, "CUDA"):

    pip install '.[cuda,test]' && python -m pytest -p no:cacheprovider tests/gpu
"""

import pytest


def gpu_missing() -> str | None:
    """Why the GPU tests cannot run here, or None."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install 'pyjit[cuda]')"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # no driver: CuPy raises its own CUDARuntimeError
        return f"no CUDA driver ({type(error).__name__}: {error})"
    return None if count else "no CUDA GPU"


def pytest_collection_modifyitems(config, items):
    reason = gpu_missing()
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.gpu)
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def cupy():
    import cupy

    return cupy
