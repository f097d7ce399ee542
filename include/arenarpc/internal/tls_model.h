// The TLS model of arenarpc's `thread_local`s in headers.
//
//   ARENARPC_TLS_MODEL static inline thread_local constinit int x = 0;
//
// By default none is forced, so that a library using arenarpc can be
// dlopen'ed (initial-exec in a .so takes static TLS space, which dlopen
// cannot grow). Define ARENARPC_INITIAL_EXEC_TLS=1 (for arenarpc and every
// file including its headers) to force initial-exec when arenarpc is built
// -fPIC but only ever linked into executables.
#ifndef ARENARPC_INTERNAL_TLS_MODEL_H_
#define ARENARPC_INTERNAL_TLS_MODEL_H_

#if defined(ARENARPC_INITIAL_EXEC_TLS) && ARENARPC_INITIAL_EXEC_TLS
#define ARENARPC_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define ARENARPC_TLS_MODEL
#endif

#endif  // ARENARPC_INTERNAL_TLS_MODEL_H_
