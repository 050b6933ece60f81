"""The host C library's vector math: which scalar ops the C kernels compute with glibc's
vector functions, and how far from exact they are. The scheduler reads it too
(NOTE(selected-values)), so it lives below the C wing.

The libmvec functions (float and double variants) of glibc 2.35+ that the formula
language uses, by scalar op: declared `omp declare simd` in the prelude.
NOTE(vector-math-accuracy): a kernel's result of a VECTOR_MATH function is at most
VECTOR_MATH_ULPS units in the last place from the exact result, in float32 and float64,
wherever that result is finite (NaN and infinities are NumPy's). That is the accuracy
glibc gives these functions: the vectorized loop calls its vector variants (libmvec),
which glibc tests against a 4-ulp maximum error on their domains (its libmvec notes),
and a loop's remainder elements call the scalar functions, whose known errors glibc's
manual lists ("Known Maximum Errors in Math Functions") within that. The variant that
runs (SSE, AVX2 or AVX-512, by config.kernel_march and the CPU) changes the last bits:
results may differ by a few ulp from one CPU to another, never beyond the promise.
NumPy has its own errors (its SIMD float32 loops, SVML on AVX-512), so a kernel and
NumPy may differ by up to the sum of the two. sqrt is correctly rounded (half an ulp).
"""

VECTOR_MATH_ULPS = 4
VECTOR_MATH = {"exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "sin": "sin", "cos": "cos",
               "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "arcsin": "asin", "arccos": "acos",
               "arctan": "atan", "arctan2": "atan2", "erf": "erf", "pow": "pow"}
