# arenarpc_grpc_generate(<target> PROTOS <files...>
#                        [IMPORT_DIRS <dirs...>] [OUT_DIR <dir>])
#
# Runs protoc with the cpp, grpc and arenarpc generators on each proto and
# adds <rel>.pb.{h,cc}, <rel>.grpc.pb.{h,cc} and <rel>.arenarpc.h to
# <target>, with OUT_DIR on its (PUBLIC) include path. <rel> is the proto's
# path relative to the first IMPORT_DIRS entry that holds it, without
# ".proto", as protoc names it: protos/acme/orders/v1/orders.proto with
# IMPORT_DIRS protos gives OUT_DIR/acme/orders/v1/orders.pb.h, which is what
# generated code #includes for `import "acme/orders/v1/orders.proto"`.
#
#   find_package(arenarpc CONFIG REQUIRED COMPONENTS grpc)
#   add_library(orders_proto STATIC)
#   arenarpc_grpc_generate(orders_proto
#     PROTOS protos/acme/common/v1/types.proto
#            protos/acme/orders/v1/orders.proto
#     IMPORT_DIRS protos)
#   target_link_libraries(orders_proto PUBLIC arenarpc::grpc)
#
# PROTOS: paths, relative ones to the current source directory. List every
# proto a listed one imports from IMPORT_DIRS too (each is compiled once,
# into this target); protobuf's own (google/protobuf/*.proto) come with
# libprotobuf. IMPORT_DIRS: the import roots (-I), searched in order;
# default: each proto's own directory (flat output). OUT_DIR: default
# ${CMAKE_CURRENT_BINARY_DIR}/<target>_gen.
#
# Tools: protobuf::protoc, gRPC::grpc_cpp_plugin and
# arenarpc::protoc-gen-arenarpc (the installed plugin when used from an
# installed arenarpc, the built one inside arenarpc's own tree).
include_guard(GLOBAL)

function(arenarpc_grpc_generate target)
  cmake_parse_arguments(G "" "OUT_DIR" "PROTOS;IMPORT_DIRS" ${ARGN})
  if(NOT G_PROTOS)
    message(FATAL_ERROR "arenarpc_grpc_generate(${target}): no PROTOS")
  endif()
  if(NOT G_OUT_DIR)
    set(G_OUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/${target}_gen)
  endif()
  foreach(tool protobuf::protoc gRPC::grpc_cpp_plugin
               arenarpc::protoc-gen-arenarpc)
    if(NOT TARGET ${tool})
      message(FATAL_ERROR "arenarpc_grpc_generate: no target ${tool} "
        "(find_package(arenarpc CONFIG COMPONENTS grpc) provides it)")
    endif()
  endforeach()
  # DEPENDS needs the real target for a build-order dependency.
  get_target_property(plugin arenarpc::protoc-gen-arenarpc ALIASED_TARGET)
  if(NOT plugin)
    set(plugin arenarpc::protoc-gen-arenarpc)
  endif()

  foreach(list G_PROTOS G_IMPORT_DIRS)
    set(absolute)
    foreach(path ${${list}})
      get_filename_component(path ${path} ABSOLUTE
                             BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
      list(APPEND absolute ${path})
    endforeach()
    set(${list} ${absolute})
  endforeach()
  set(protos ${G_PROTOS})
  set(roots ${G_IMPORT_DIRS})

  set(all_outs)
  foreach(proto ${protos})
    # The proto's name for protoc: relative to the first root holding it.
    set(rel)
    foreach(root ${roots})
      cmake_path(IS_PREFIX root ${proto} NORMALIZE inside)
      if(inside)
        file(RELATIVE_PATH rel ${root} ${proto})
        break()
      endif()
    endforeach()
    set(import_args)
    foreach(root ${roots})
      list(APPEND import_args -I${root})
    endforeach()
    if(NOT rel)
      if(roots)
        message(FATAL_ERROR "arenarpc_grpc_generate(${target}): ${proto} "
          "is in none of IMPORT_DIRS (${roots})")
      endif()
      get_filename_component(dir ${proto} DIRECTORY)
      get_filename_component(rel ${proto} NAME)
      set(import_args -I${dir})
    endif()
    string(REGEX REPLACE "\\.proto$" "" base ${rel})
    set(out ${G_OUT_DIR}/${base})
    set(outs ${out}.pb.h ${out}.pb.cc ${out}.grpc.pb.h ${out}.grpc.pb.cc
             ${out}.arenarpc.h)
    # Every listed proto as a dependency: a changed import regenerates too.
    add_custom_command(
      OUTPUT ${outs}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${G_OUT_DIR}
      COMMAND protobuf::protoc ${import_args}
              --cpp_out=${G_OUT_DIR} --grpc_out=${G_OUT_DIR}
              --arenarpc_out=${G_OUT_DIR}
              --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>
              --plugin=protoc-gen-arenarpc=$<TARGET_FILE:arenarpc::protoc-gen-arenarpc>
              ${proto}
      DEPENDS ${protos} ${plugin}
      COMMENT "protoc (cpp, grpc, arenarpc) ${rel}"
      VERBATIM)
    list(APPEND all_outs ${outs})
  endforeach()
  target_sources(${target} PRIVATE ${all_outs})
  target_include_directories(${target} PUBLIC ${G_OUT_DIR})
endfunction()
