"""Code generation: fusion scheduling, a loop-level kernel IR, renderers for C (CPU)
and CUDA (CuPy), and building generated C into loaded kernels (`build`)."""
