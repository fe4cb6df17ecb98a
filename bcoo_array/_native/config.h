// Build configuration of the native kernels.
#ifndef BCOO_ARRAY_NATIVE_CONFIG_H_
#define BCOO_ARRAY_NATIVE_CONFIG_H_

// An AVX2 copy of the kernels, picked at run time (GCC on x86-64 only:
// it is compiled with `#pragma GCC target`).
#ifndef BCOO_HAVE_AVX2
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define BCOO_HAVE_AVX2 1
#else
#define BCOO_HAVE_AVX2 0
#endif
#endif

#endif  // BCOO_ARRAY_NATIVE_CONFIG_H_
