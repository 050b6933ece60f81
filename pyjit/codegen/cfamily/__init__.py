"""What the C and CUDA kernel writers share: C types, literals, the C dialect of the
scalar ops' spellings and index arithmetic, reductions as the registry states them, and
the base kernel writer."""
