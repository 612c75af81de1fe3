"""The GPU engine (numba-cuda), an optional extra: nothing here is imported on a CPU-only
path except ``device.gpu_available``, which imports no CUDA package at module load.

Modules, lowest first:

- ``device``: the CUDA switch (real GPU or numba's simulator), typed views over raw buffers,
  memsets and the other calls that differ between the two.
- ``device_cache``: the BaM-style page cache as device functions.
- ``device_queue``: the device side of GPU-initiated reads (submission/completion queues).
- ``host_queue``: the host side, the compiled I/O workers that drain the queue.
- ``kernel``: the generated query kernel (source, compilation cache).
- ``launch``: one plan's prepared launch and its result buffers.
- ``backends``: where a table's pages come from: ``DeviceBackend`` (GPU memory),
  ``HostBackend`` (pinned host memory, zero copy) and ``FileBackend`` (the volume files,
  through the queues).
- ``engine``: ``GpuEngine``, which runs a physical plan on one backend.
"""
