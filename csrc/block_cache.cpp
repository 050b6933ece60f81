// The API table is defined in guards.cpp and imported by guards_init at module init.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyjit_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include "block_cache.h"

#include <sys/mman.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ref.h"

namespace pyjit {
namespace {

// NOTE(block-cache): glibc maps a block of 32 MiB or more afresh on every malloc, as
// pages the kernel zeroes on first touch, which costs as much as a fused kernel's own
// pass over them: 8M float32 elements of `sin(x)*cos(x) + exp(-x*x)` took 4.4 ms with
// fresh outputs and 2.9 ms with touched ones. So the arrays of that size the C launcher
// allocates (NOTE(c-launcher) in launcher.cpp) take their data through a NumPy memory
// handler (NEP 49) whose free keeps the block, up to a limit in all, and whose malloc
// hands one back when its size is asked for again: a loop calling a compiled function
// whose previous results it has dropped reuses their pages. The arrays are NumPy's own
// in every other way (they own their data; NumPy frees it through the handler they
// carry). A request no cached block fits empties the cache first, so blocks a program
// no longer asks for are not held past its next different request; `pyjit.reset()`
// empties it too. The limit is 256 MiB, or $PYJIT_BLOCK_CACHE_BYTES read at start-up
// (0 turns the cache off).
// Smaller blocks stay with glibc, which keeps them in its heap, pages and all, with the
// thresholds pyjit sets (NOTE(heap-trim) below). Cached
// here too (from 1 MiB, before), they were held out of glibc's reach while the program
// allocated other sizes: the harness's MLP training step peaked at 78 MB against
// NumPy's 75, and at 74 MB with this threshold, with no page faults per call either way.
// The threshold is data bytes whose malloc chunk (a page of header and rounding more)
// is over glibc's largest threshold.
constexpr size_t kMinCachedBytes = (size_t{32} << 20) - 4096;
constexpr size_t kDefaultLimitBytes = size_t{256} << 20;

struct Cache {
  std::mutex mutex;
  std::vector<std::pair<void*, size_t>> free_blocks;  // oldest first
  std::unordered_map<void*, size_t> handed_out;       // blocks of ours that arrays hold
  size_t cached_bytes = 0;
  size_t limit_bytes = kDefaultLimitBytes;
  Py_ssize_t hits = 0, misses = 0;

  void release_all() {  // with the mutex held
    for (const auto& [block, size] : free_blocks) std::free(block);
    free_blocks.clear();
    cached_bytes = 0;
  }
};

Cache& cache() {
  static Cache* instance = new Cache();  // never destroyed: arrays may outlive module teardown
  return *instance;
}

// NumPy's own allocator asks for transparent huge pages for blocks of 4 MiB and more
// (where the kernel leaves them to madvise), and so do the blocks of this cache, which
// are all larger: with 4 KiB pages, a pass over 32 MiB walks 8192 TLB entries.
void ask_for_huge_pages(void* block, size_t size) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(block);
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t aligned = (start + page - 1) / page * page;
  if (aligned - start < size) madvise(reinterpret_cast<void*>(aligned), size - (aligned - start), MADV_HUGEPAGE);
}

void* cache_malloc(void*, size_t size) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  void* block = nullptr;
  for (auto it = c.free_blocks.begin(); it != c.free_blocks.end(); ++it) {
    if (it->second == size) {
      block = it->first;
      c.free_blocks.erase(it);
      c.cached_bytes -= size;
      ++c.hits;
      break;
    }
  }
  if (!block) {
    ++c.misses;
    c.release_all();
    block = std::malloc(size);
    if (!block) return nullptr;
    ask_for_huge_pages(block, size);
  }
  c.handed_out.emplace(block, size);
  return block;
}

void* cache_calloc(void* context, size_t count, size_t item_size) {
  if (item_size != 0 && count > SIZE_MAX / item_size) return nullptr;
  void* block = cache_malloc(context, count * item_size);
  if (block) std::memset(block, 0, count * item_size);
  return block;
}

// A block that changes size (ndarray.resize) leaves the cache's books: NumPy frees it
// through this handler later, which then gives it back to malloc.
void* cache_realloc(void*, void* block, size_t size) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.handed_out.erase(block);
  }
  return std::realloc(block, size);
}

// NumPy passes the array's size in bytes, which may differ from the block's (an array
// whose dtype or shape was reassigned); the size recorded at malloc is the block's.
void cache_free(void*, void* block, size_t) {
  if (!block) return;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto held = c.handed_out.find(block);
  if (held == c.handed_out.end()) {
    std::free(block);
    return;
  }
  const size_t size = held->second;
  c.handed_out.erase(held);
  while (!c.free_blocks.empty() && c.cached_bytes + size > c.limit_bytes) {
    std::free(c.free_blocks.front().first);
    c.cached_bytes -= c.free_blocks.front().second;
    c.free_blocks.erase(c.free_blocks.begin());
  }
  if (c.cached_bytes + size > c.limit_bytes) {
    std::free(block);
    return;
  }
  c.free_blocks.emplace_back(block, size);
  c.cached_bytes += size;
}

PyDataMem_Handler g_handler = {
    "pyjit_block_cache",
    1,
    {nullptr, cache_malloc, cache_calloc, cache_realloc, cache_free},
};
PyObject* g_handler_capsule = nullptr;

// The handler of the launcher's line-aligned arrays (NOTE(line-aligned-buffers)). NumPy
// calls only its realloc (ndarray.resize) and free; malloc and calloc serve an array
// made while it is the current handler, which it never is. A block is a malloc'd one a
// line longer than asked, the data starting on the first line boundary past its start;
// the byte before the data says how far past (1 to 64), for free and realloc.
constexpr size_t kLineBytes = 64;
constexpr size_t kLineAlignedBelow = size_t{64} << 10;

unsigned char* first_line_after(unsigned char* block) {
  return reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(block) + kLineBytes) & ~(kLineBytes - 1));
}

unsigned char* aligned_in(unsigned char* block) {
  unsigned char* data = first_line_after(block);
  data[-1] = static_cast<unsigned char>(data - block);
  return data;
}

unsigned char* block_of(void* data) {
  auto* bytes = static_cast<unsigned char*>(data);
  return bytes - bytes[-1];
}

void* aligned_malloc(void*, size_t size) {
  if (size > SIZE_MAX - kLineBytes) return nullptr;
  auto* block = static_cast<unsigned char*>(std::malloc(size + kLineBytes));
  return block ? aligned_in(block) : nullptr;
}

void* aligned_calloc(void* context, size_t count, size_t item_size) {
  if (item_size != 0 && count > SIZE_MAX / item_size) return nullptr;
  void* block = aligned_malloc(context, count * item_size);
  if (block) std::memset(block, 0, count * item_size);
  return block;
}

// realloc may move the block to another distance from a line: the data moves with it.
void* aligned_realloc(void* context, void* data, size_t size) {
  if (!data) return aligned_malloc(context, size);
  if (size > SIZE_MAX - kLineBytes) return nullptr;
  const size_t offset = static_cast<unsigned char*>(data)[-1];
  auto* block = static_cast<unsigned char*>(std::realloc(block_of(data), size + kLineBytes));
  if (!block) return nullptr;
  unsigned char* moved = first_line_after(block);
  if (moved != block + offset) std::memmove(moved, block + offset, size);
  return aligned_in(block);
}

void aligned_free(void*, void* data, size_t) {
  if (data) std::free(block_of(data));
}

PyDataMem_Handler g_aligned_handler = {
    "pyjit_line_aligned",
    1,
    {nullptr, aligned_malloc, aligned_calloc, aligned_realloc, aligned_free},
};
PyObject* g_aligned_handler_capsule = nullptr;

// NOTE(heap-trim): glibc's malloc serves blocks under its mmap threshold from its heap,
// and gives the heap's free top back to the system once it exceeds the trim threshold.
// Both thresholds grow on their own: the first free of a mapped block of size S sets
// them to S and 2 S. A compiled loop keeps more arrays alive at once than NumPy's
// statement-by-statement temporaries (the carries, their new values, a copy for an item
// assignment), and dropping them together leaves a free top of several arrays: with
// 3.2 MB arrays (the trim threshold then 6.4 MB), the 1-D Jacobi loop trimmed and regrew
// its heap every iteration (260 brk calls, 33,000 page faults a call, each new array's
// pages zeroed by the kernel on first touch) and ran 5x slower than NumPy. So at import
// both are set where glibc's own rule takes them at its largest threshold (32 MiB on
// 64-bit, the block cache's lower bound above): mapped from 32 MiB, the heap trimmed past
// 64 MiB of free top. The process then keeps up to 64 MiB of freed heap for reuse, as it
// would after freeing one 32 MiB block. Setting either threshold turns glibc's dynamic
// rule off, so a process whose user chose a malloc setting (MALLOC_TRIM_THRESHOLD_,
// MALLOC_MMAP_THRESHOLD_, GLIBC_TUNABLES naming one) keeps it, untouched.
constexpr size_t kMmapThresholdBytes = size_t{32} << 20;
constexpr size_t kTrimThresholdBytes = size_t{64} << 20;

bool user_chose_malloc_thresholds() {
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") || std::getenv("MALLOC_MMAP_THRESHOLD_")) return true;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables && (std::strstr(tunables, "malloc.trim_threshold") || std::strstr(tunables, "malloc.mmap_threshold"));
}

void keep_heap_top() {
#ifdef __GLIBC__
  if (user_chose_malloc_thresholds()) return;
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThresholdBytes));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimThresholdBytes));
#endif
}

}  // namespace

int block_cache_init() {
  keep_heap_top();
  if (const char* limit = std::getenv("PYJIT_BLOCK_CACHE_BYTES")) {
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(limit, &end, 10);
    if (end == limit || *end != '\0') {
      PyErr_Format(PyExc_ValueError, "PYJIT_BLOCK_CACHE_BYTES=%s is not a number of bytes", limit);
      return -1;
    }
    cache().limit_bytes = static_cast<size_t>(bytes);
  }
  g_handler_capsule = PyCapsule_New(&g_handler, "mem_handler", nullptr);
  g_aligned_handler_capsule = PyCapsule_New(&g_aligned_handler, "mem_handler", nullptr);
  return g_handler_capsule && g_aligned_handler_capsule ? 0 : -1;
}

static_assert(sizeof(npy_intp) == sizeof(Py_ssize_t), "NumPy's sizes are Py_ssize_t wide");

// NOTE(line-aligned-buffers): the launcher's small arrays start on a cache line. A
// columnar reduction's team of threads (NOTE(columnar-reductions)) accumulates into a
// buffer, each thread its own slice of columns, every row group; when the buffer starts
// off a line (malloc and NumPy promise 16 bytes), the line holding the slices' boundary
// is written by two threads by turns. `mean` along axis 0 of (2000, 512) float32 on two
// threads, the kernel alone, took 21 us with the accumulator on a line and 33-34 us with
// it 16, 32 or 48 bytes past one. The arrays carry a handler of their own, so they own
// their data as NumPy's do, and freeing one takes no lock. Only arrays below
// kLineAlignedBelow are aligned: in a larger one, each of two threads' slices spans
// hundreds of lines and the one they share costs nothing measurable, while blocks of
// exactly the size asked (NumPy's own are) let glibc hand a freed block of NumPy's to
// the launcher and back. Aligned blocks for every array below the block cache's size
// (glibc's aligned_alloc first, which carves each out of a larger chunk and frees the
// pieces around it; then malloc's, a line longer) made the harness's MLP training step
// peak at 101-103 MB, then 75.7, against NumPy's 75.4, and fault in about 2900 fresh pages
// a step; with these it peaks at 74.
PyObject* line_aligned_empty(int ndim, npy_intp* dims, PyArray_Descr* dtype, size_t bytes) {
  if (PyDataType_FLAGCHK(dtype, NPY_ITEM_REFCOUNT)) return PyArray_Empty(ndim, dims, dtype, 0);
  void* data = aligned_malloc(nullptr, bytes);
  if (!data) {
    Py_DECREF(dtype);
    return PyErr_NoMemory();
  }
  PyObject* array = PyArray_NewFromDescr(&PyArray_Type, dtype, ndim, dims, nullptr, data, NPY_ARRAY_CARRAY, nullptr);
  if (!array) {
    aligned_free(nullptr, data, bytes);
    return nullptr;
  }
  PyArray_ENABLEFLAGS(reinterpret_cast<PyArrayObject*>(array), NPY_ARRAY_OWNDATA);
  reinterpret_cast<PyArrayObject_fields*>(array)->mem_handler = Py_NewRef(g_aligned_handler_capsule);
  return array;
}

PyObject* empty_array(int ndim, const Py_ssize_t* sizes, PyObject* dtype_object) {
  auto* dtype = reinterpret_cast<PyArray_Descr*>(dtype_object);
  npy_intp dims[NPY_MAXDIMS];
  npy_intp bytes = PyDataType_ELSIZE(dtype);
  for (int axis = 0; axis < ndim; ++axis) bytes *= (dims[axis] = sizes[axis]);
  if (static_cast<size_t>(bytes) < kLineAlignedBelow) {
    return line_aligned_empty(ndim, dims, dtype, static_cast<size_t>(bytes));
  }
  const bool cached = static_cast<size_t>(bytes) >= kMinCachedBytes && cache().limit_bytes > 0;
  if (!cached) return PyArray_Empty(ndim, dims, dtype, 0);
  // The handler is a context variable NumPy reads when it allocates: set for this one
  // allocation, then the caller's restored.
  Ref previous = Ref::steal(PyDataMem_SetHandler(g_handler_capsule));
  if (!previous) {
    Py_DECREF(dtype);
    return nullptr;
  }
  PyObject* array = PyArray_Empty(ndim, dims, dtype, 0);
  Ref restored = Ref::steal(PyDataMem_SetHandler(previous.get()));
  if (!restored) {
    Py_XDECREF(array);
    return nullptr;
  }
  return array;
}

PyObject* block_cache_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n}", "hits", c.hits, "misses", c.misses, "cached_bytes",
                       static_cast<Py_ssize_t>(c.cached_bytes), "cached_blocks",
                       static_cast<Py_ssize_t>(c.free_blocks.size()), "limit_bytes",
                       static_cast<Py_ssize_t>(c.limit_bytes));
}

void empty_block_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.release_all();
}

}  // namespace pyjit
