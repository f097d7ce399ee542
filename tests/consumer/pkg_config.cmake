# Included by run.cmake (PKG_CONFIG_TEST, the pkg_config_consumer test) after
# the install into ${prefix}: the installed .pc files, found through
# PKG_CONFIG_PATH (and protobuf's own, where it has a prefix of its own),
# each compiling and running a consumer with nothing but
# `pkg-config --cflags --libs`. Where a .pc file cannot be checked it says
# ".pc files not checked" (the test's SKIP_REGULAR_EXPRESSION).
if(NOT PKG_CONFIG)
  message(WARNING "pkg-config not found: .pc files not checked")
  return()
endif()
set(pc_path ${prefix}/${LIBDIR}/pkgconfig)
if(PROTOBUF_PREFIX)
  list(APPEND pc_path ${PROTOBUF_PREFIX}/lib/pkgconfig
                      ${PROTOBUF_PREFIX}/lib64/pkgconfig)
endif()
if(DEFINED ENV{PKG_CONFIG_PATH})
  list(APPEND pc_path $ENV{PKG_CONFIG_PATH})
endif()
string(REPLACE ";" ":" pc_path "${pc_path}")
set(ENV{PKG_CONFIG_PATH} "${pc_path}")
# The dependencies' own .pc files are theirs to ship (a protobuf built from
# source may lack absl's): without them there is nothing of ours to check.
execute_process(COMMAND ${PKG_CONFIG} --exists protobuf absl_status
                        absl_statusor absl_strings RESULT_VARIABLE rc)
if(rc)
  message(WARNING "protobuf or absl has no .pc file here: .pc files not checked")
  return()
endif()
# A protobuf of its own prefix without .pc files would let pkg-config fall
# back to the system's protobuf and abseil (another version, other inline
# namespaces): that link says nothing about our .pc files either.
if(PROTOBUF_PREFIX)
  execute_process(COMMAND ${PKG_CONFIG} --variable=pcfiledir protobuf
                  OUTPUT_VARIABLE pc_dir OUTPUT_STRIP_TRAILING_WHITESPACE)
  get_filename_component(pc_dir "${pc_dir}" REALPATH)
  get_filename_component(real_prefix "${PROTOBUF_PREFIX}" REALPATH)
  string(FIND "${pc_dir}/" "${real_prefix}/" at)
  if(NOT at EQUAL 0)
    message(WARNING "protobuf in ${PROTOBUF_PREFIX} has no .pc file (pkg-config "
                    "finds ${pc_dir}): .pc files not checked")
    return()
  endif()
endif()
set(modules arenarpc)
if(WITH_GRPC)
  list(APPEND modules arenarpc-grpc)
endif()
foreach(module ${modules})
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs ${module}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE pc_flags
                  ERROR_VARIABLE pc_error OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc)
    message(FATAL_ERROR "pkg-config ${module} failed: ${pc_error}")
  endif()
  message("pkg-config --cflags --libs ${module}: ${pc_flags}")
  separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
  separate_arguments(cxx_flags UNIX_COMMAND "${flags}")
  set(source ${SOURCE_DIR}/main.cc)
  set(expected "consumer ok")
  # main.cc checks the .pc file's version against the header's.
  execute_process(COMMAND ${PKG_CONFIG} --modversion ${module}
                  OUTPUT_VARIABLE pc_version OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(version_flag "-DARENARPC_PACKAGE_VERSION=\"${pc_version}\"")
  if(module STREQUAL "arenarpc-grpc")
    set(source ${SOURCE_DIR}/pkg_config_grpc.cc)
    set(expected "pkg-config grpc ok")
  endif()
  set(program ${WORK_DIR}/pkg_config_${module})
  execute_process(COMMAND ${CXX} -std=c++20 ${cxx_flags} ${version_flag} ${source}
                          -o ${program} ${pc_flags}
                  RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "compiling with pkg-config ${module} failed: ${rc}")
  endif()
  run(pkg_config_${module} ${program} "${expected}")
endforeach()
