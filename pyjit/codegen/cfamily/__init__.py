"""Code shared by the C and CUDA kernel writers."""
