#include "codegen.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "advise_build_config.h"

extern char** environ;

namespace arenarpc::advise {
namespace {

namespace fs = std::filesystem;
using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptorProto;

// Runs argv[0] (looked up on PATH) with stdout and stderr into `log`;
// returns its exit status, or -1 if it could not start.
int Run(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid;
  const int rc =
      posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string FirstLines(const std::string& path, int n) {
  std::ifstream in(path);
  std::string line, out;
  for (int i = 0; i < n && std::getline(in, line); ++i) {
    absl::StrAppend(&out, "\n  ", line);
  }
  return out;
}

// `tool --version`'s first line ("" if it does not run): part of the
// cache key, so a new protoc or compiler builds afresh.
std::string VersionOf(const std::string& tool, const std::string& scratch) {
  const std::string log = scratch + "/version.txt";
  fs::remove(log);
  if (Run({tool, "--version"}, log) != 0) return "";
  std::ifstream in(log);
  std::string line;
  std::getline(in, line);
  return line;
}

// FNV-1a, 64 bits: a cache key, not a defence against crafted inputs.
uint64_t Fnv1a(std::string_view bytes, uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string DefaultCacheDir() {
  const char* xdg = getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg != '\0')
    return std::string(xdg) + "/arenarpc/advise";
  const char* home = getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") +
         "/.cache/arenarpc/advise";
}

// Generated code shares the program's libprotobuf only if that is a shared
// library: look up a protobuf function the way the loaded object will.
bool ProtobufIsShared() {
  void* f =
      dlsym(RTLD_DEFAULT, "_ZN6google8protobuf23ShutdownProtobufLibraryEv");
  Dl_info lib, self;
  if (f == nullptr || dladdr(f, &lib) == 0) return false;
  if (dladdr(reinterpret_cast<void*>(&ProtobufIsShared), &self) == 0)
    return false;
  return lib.dli_fbase != self.dli_fbase;
}

std::string Canonical(const google::protobuf::FileDescriptor* file) {
  FileDescriptorProto proto;
  file->CopyTo(&proto);
  return proto.SerializeAsString();
}

}  // namespace

absl::StatusOr<BuildResult> LoadGeneratedCode(const Schema& schema,
                                              const BuildOptions& options) {
  BuildResult result;
  // The files the program does not link. Asked of the generated database,
  // not generated_pool(): the pool remembers a failed lookup and would not
  // see the file once the object registers it.
  const DescriptorPool* generated = DescriptorPool::generated_pool();
  for (const FileDescriptorProto& f : schema.set.file()) {
    FileDescriptorProto linked;
    if (!DescriptorPool::internal_generated_database()->FindFileByName(
            f.name(), &linked)) {
      result.built.push_back(f.name());
      continue;
    }
    const google::protobuf::FileDescriptor* mine =
        schema.pool.FindFileByName(f.name());
    const google::protobuf::FileDescriptor* theirs =
        generated->FindFileByName(f.name());
    // protobuf's own files (descriptor.proto for custom options, the
    // well-known types) may come from another protoc release: the linked
    // version is the one the generated code compiles against anyway.
    const bool protobufs_own = f.name().rfind("google/protobuf/", 0) == 0;
    if (theirs == nullptr ||
        (!protobufs_own && Canonical(mine) != Canonical(theirs))) {
      return absl::FailedPreconditionError(absl::StrCat(
          f.name(),
          " is linked into this program with other contents; "
          "generated code for it cannot be loaded (--code=dynamic)"));
    }
  }
  if (result.built.empty()) return result;  // all linked: nothing to build
  if (!ProtobufIsShared()) {
    return absl::FailedPreconditionError(
        "this arenarpc_advise links a static libprotobuf, which generated "
        "code loaded at run time cannot share (--code=dynamic)");
  }

  const std::string protoc =
      options.protoc.empty() ? ARENARPC_ADVISE_PROTOC : options.protoc;
  const std::string cxx =
      options.cxx.empty() ? ARENARPC_ADVISE_CXX : options.cxx;
  const std::string cache_dir =
      options.cache_dir.empty() ? DefaultCacheDir() : options.cache_dir;
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat(cache_dir, ": ", ec.message()));
  }
  std::string scratch = cache_dir + "/build-XXXXXX";
  if (mkdtemp(scratch.data()) == nullptr) {
    return absl::UnavailableError(scratch + ": cannot create a directory");
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } cleanup{scratch};

  const std::string protoc_version = VersionOf(protoc, scratch);
  if (protoc_version.empty()) {
    return absl::UnavailableError(
        absl::StrCat("cannot run protoc (", protoc, "; --protoc=PATH)"));
  }
  const std::string cxx_version = VersionOf(cxx, scratch);
  if (cxx_version.empty()) {
    return absl::UnavailableError(
        absl::StrCat("cannot run the C++ compiler (", cxx, "; --cxx=PATH)"));
  }
  std::vector<std::string> compile = {
      cxx, "-std=c++" ARENARPC_ADVISE_CXX_STANDARD, "-O2", "-fPIC", "-shared"};
  for (absl::string_view dir :
       absl::StrSplit(ARENARPC_ADVISE_INCLUDE_DIRS, ';', absl::SkipEmpty())) {
    compile.push_back("-I" + std::string(dir));
  }
  for (absl::string_view flag :
       absl::StrSplit(options.cxxflags, ' ', absl::SkipEmpty())) {
    compile.push_back(std::string(flag));
  }

  uint64_t key = Fnv1a(schema.set_bytes);
  for (const std::string& part :
       {protoc_version, cxx, cxx_version,
        absl::StrJoin(compile.begin() + 1, compile.end(), " "),
        absl::StrJoin(result.built, ","),
        std::to_string(GOOGLE_PROTOBUF_VERSION)}) {
    key = Fnv1a(part, Fnv1a(std::string_view("\0", 1), key));
  }
  // After the key: the scratch directory differs from run to run.
  compile.insert(compile.begin() + 1, "-I" + scratch + "/gen");
  char hex[17];
  snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(key));
  result.object = absl::StrCat(cache_dir, "/", hex, ".so");

  if (fs::exists(result.object, ec)) {
    result.from_cache = true;
  } else {
    const auto start = std::chrono::steady_clock::now();
    const std::string set_file = scratch + "/set.pb";
    {
      std::ofstream out(set_file, std::ios::binary);
      out << schema.set_bytes;
      if (!out) return absl::UnavailableError(set_file + ": cannot write");
    }
    fs::create_directories(scratch + "/gen", ec);
    const std::string log = scratch + "/log.txt";
    std::vector<std::string> gen = {protoc, "--descriptor_set_in=" + set_file,
                                    "--cpp_out=" + scratch + "/gen"};
    gen.insert(gen.end(), result.built.begin(), result.built.end());
    if (Run(gen, log) != 0) {
      return absl::UnavailableError(
          absl::StrCat("protoc failed (", protoc, "):", FirstLines(log, 20)));
    }
    for (const std::string& f : result.built) {
      compile.push_back(scratch + "/gen/" + f.substr(0, f.rfind(".proto")) +
                        ".pb.cc");
    }
    // Built beside the cache entry, then renamed: a concurrent run never
    // loads half an object.
    const std::string partial = scratch + "/out.so";
    compile.insert(compile.end(), {"-o", partial});
    if (Run(compile, log) != 0) {
      return absl::UnavailableError(
          absl::StrCat("compiling the generated code failed (", cxx,
                       "):", FirstLines(log, 20)));
    }
    fs::rename(partial, result.object, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat(result.object, ": ", ec.message()));
    }
    result.compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  }

  // Never closed: generated_pool() keeps pointers into it.
  if (dlopen(result.object.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot load ", result.object, ": ", dlerror()));
  }
  for (const std::string& f : result.built) {
    if (generated->FindFileByName(f) == nullptr) {
      return absl::UnavailableError(absl::StrCat(
          result.object, " did not register ", f, " (stale cache entry?)"));
    }
  }
  return result;
}

}  // namespace arenarpc::advise
