// The TLS model of arenarpc's `thread_local`s in headers.
//
//   ARENARPC_TLS_MODEL static inline thread_local constinit int x = 0;
//
// By default none is forced: the compiler picks the fastest model the code
// allows. In an executable (PIE or not) that is a direct %fs-relative
// access; in -fPIC code (a shared library, or a static library that may end
// up in one) it is a __tls_get_addr call (a TLS descriptor call with
// -mtls-dialect=gnu2), which is what lets a library using arenarpc be
// dlopen'ed. Forcing initial-exec in -fPIC code makes that .so take static
// TLS space, which dlopen cannot grow past a small reserve ("cannot allocate
// memory in static TLS block").
//
// Define ARENARPC_INITIAL_EXEC_TLS=1 (for arenarpc and every file that
// includes its headers) to force initial-exec when arenarpc is only ever
// linked into executables and is built -fPIC anyway; never for code that
// goes into a dlopen'ed library.
#ifndef ARENARPC_INTERNAL_TLS_MODEL_H_
#define ARENARPC_INTERNAL_TLS_MODEL_H_

#if defined(ARENARPC_INITIAL_EXEC_TLS) && ARENARPC_INITIAL_EXEC_TLS
#define ARENARPC_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define ARENARPC_TLS_MODEL
#endif

#endif  // ARENARPC_INTERNAL_TLS_MODEL_H_
