// Large array blocks kept for reuse across calls (NOTE(block-cache) in block_cache.cpp).
#pragma once

#include <Python.h>

namespace pyjit {

// Creates the NumPy memory handler; the NumPy API table must already be imported.
int block_cache_init();
// An uninitialized C-contiguous array, as PyArray_Empty gives (steals `dtype`, a
// PyArray_Descr), whose data, when it is a large block, comes from the cache and returns
// to it when freed.
PyObject* empty_array(int ndim, const Py_ssize_t* dims, PyObject* dtype);
// {"hits", "misses", "cached_bytes", "cached_blocks", "limit_bytes"}
PyObject* block_cache_stats();
void empty_block_cache();

}  // namespace pyjit
