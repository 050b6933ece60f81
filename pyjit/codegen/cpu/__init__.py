"""The CPU wing: kernel IR as C with OpenMP, built by the system compiler into loaded
libraries, their threads, autotuning, the C launcher's description, and the CPU target."""
