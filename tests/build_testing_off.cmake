# A consumer's configure with -DBUILD_TESTING=OFF: the build (what
# `cmake --install` builds) holds the libraries and the protoc plugin only.
# cmake -DSOURCE_DIR=... -DWORK_DIR=... -DCXX=... [-DWITH_GRPC=ON]
#       [-DPREFIX_PATH=...] -P build_testing_off.cmake
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G Ninja
          -DBUILD_TESTING=OFF -DCMAKE_CXX_COMPILER=${CXX}
          -DARENARPC_BUILD_GRPC=${WITH_GRPC} "-DCMAKE_PREFIX_PATH=${PREFIX_PATH}"
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure failed: ${err}")
endif()
execute_process(COMMAND ninja -C ${WORK_DIR} -t targets all
                OUTPUT_VARIABLE targets RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ninja -t targets failed")
endif()
# Linked outputs: executables, static and shared libraries, modules.
string(REGEX MATCHALL "[^\n]*: (CXX|C)_(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY)_LINKER[^\n]*"
       linked "${targets}")
set(expected arenarpc)
if(WITH_GRPC)
  list(APPEND expected arenarpc_grpc protoc-gen-arenarpc)
endif()
set(built "")
foreach(line IN LISTS linked)
  string(REGEX REPLACE ":.*" "" output "${line}")
  get_filename_component(name ${output} NAME_WE)
  string(REGEX REPLACE "^lib" "" name ${name})
  list(APPEND built ${name})
endforeach()
list(SORT built)
list(SORT expected)
if(NOT built STREQUAL expected)
  message(FATAL_ERROR "with BUILD_TESTING=OFF the build links: ${built}; "
                      "expected only: ${expected}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "BUILD_TESTING=OFF links only: ${built}")
