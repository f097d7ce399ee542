# protobuf_generate() for the fixture's package: protobuf's own
# cmake/protobuf-generate.cmake is not in the grpcio-tools sdist. Only what
# arenarpc uses: LANGUAGE cpp, TARGET or OUT_VAR, PROTOS, IMPORT_DIRS,
# PROTOC_OUT_DIR, PLUGIN_OPTIONS. Outputs are named like protobuf's: each
# proto's path relative to the import directory that holds it.
function(protobuf_generate)
  cmake_parse_arguments(G "APPEND_PATH" "LANGUAGE;TARGET;OUT_VAR;PROTOC_OUT_DIR"
                        "PROTOS;IMPORT_DIRS;PLUGIN_OPTIONS" ${ARGN})
  if(G_LANGUAGE AND NOT G_LANGUAGE STREQUAL "cpp")
    message(FATAL_ERROR "protobuf_generate: this package's protoc has C++ only")
  endif()
  if(NOT G_PROTOC_OUT_DIR)
    set(G_PROTOC_OUT_DIR ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  if(NOT G_PROTOS AND G_TARGET)
    get_target_property(G_PROTOS ${G_TARGET} SOURCES)
    list(FILTER G_PROTOS INCLUDE REGEX "\\.proto$")
  endif()
  set(include_args "")
  foreach(dir ${G_IMPORT_DIRS})
    get_filename_component(dir ${dir} ABSOLUTE)
    list(APPEND include_args -I ${dir})
  endforeach()
  set(options "")
  if(G_PLUGIN_OPTIONS)
    string(JOIN "," options ${G_PLUGIN_OPTIONS})
    set(options "${options}:")
  endif()
  set(outputs "")
  foreach(proto ${G_PROTOS})
    get_filename_component(abs ${proto} ABSOLUTE)
    get_filename_component(dir ${abs} DIRECTORY)
    set(rel "")
    foreach(import ${G_IMPORT_DIRS})
      get_filename_component(import ${import} ABSOLUTE)
      file(RELATIVE_PATH candidate ${import} ${abs})
      if(NOT candidate MATCHES "^\\.\\.")
        set(rel ${candidate})
        break()
      endif()
    endforeach()
    if(NOT rel)
      get_filename_component(rel ${abs} NAME)
      list(APPEND include_args -I ${dir})
    endif()
    string(REGEX REPLACE "\\.proto$" "" stem ${rel})
    set(generated ${G_PROTOC_OUT_DIR}/${stem}.pb.h ${G_PROTOC_OUT_DIR}/${stem}.pb.cc)
    add_custom_command(
      OUTPUT ${generated}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${G_PROTOC_OUT_DIR}
      COMMAND protobuf::protoc --cpp_out=${options}${G_PROTOC_OUT_DIR}
              ${include_args} ${abs}
      DEPENDS ${abs} protobuf::protoc
      COMMENT "protoc ${rel}"
      VERBATIM)
    list(APPEND outputs ${generated})
  endforeach()
  set_source_files_properties(${outputs} PROPERTIES GENERATED TRUE)
  if(G_OUT_VAR)
    set(${G_OUT_VAR} ${outputs} PARENT_SCOPE)
  endif()
  if(G_TARGET)
    target_sources(${G_TARGET} PRIVATE ${outputs})
  endif()
endfunction()
