// protoc with the C++ generator only, and plugins: what arenarpc's tests
// and benchmarks run (--cpp_out, --descriptor_set_out, --plugin). The
// other languages' generators (Java, C#, Rust, ...; about 100 of
// libprotoc's 138 files) are not built, to keep a cold fixture build short.
// Otherwise the same as protobuf's src/google/protobuf/compiler/main.cc.
#include "absl/log/initialize.h"
#include "google/protobuf/compiler/command_line_interface.h"
#include "google/protobuf/compiler/cpp/generator.h"

int main(int argc, char* argv[]) {
  absl::InitializeLog();
  google::protobuf::compiler::CommandLineInterface cli;
  cli.AllowPlugins("protoc-");
  google::protobuf::compiler::cpp::CppGenerator cpp_generator;
  cli.RegisterGenerator("--cpp_out", "--cpp_opt", &cpp_generator,
                        "Generate C++ header and source.");
  return cli.Run(argc, argv);
}
