"""The CUDA wing: kernel IR as CUDA C++, launch geometry, NVRTC and the cubin cache, CuPy
launches, CUDA graphs, the emulation on the CPU, and the CUDA targets."""
