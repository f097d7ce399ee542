# protoc-gen-arenarpc on an editions file: protoc fails, and the message
# names the file and says editions are not supported.
# cmake -DPROTOC=... -DPLUGIN=... -DPROTO_DIR=... -DOUT_DIR=... -P plugin_editions.cmake
file(REMOVE_RECURSE ${OUT_DIR})
file(MAKE_DIRECTORY ${OUT_DIR})
execute_process(
  COMMAND ${PROTOC} --plugin=protoc-gen-arenarpc=${PLUGIN}
          --arenarpc_out=${OUT_DIR} -I ${PROTO_DIR} edition_2023.proto
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "the plugin generated for an editions file")
endif()
if(NOT err MATCHES "edition_2023\\.proto: protoc-gen-arenarpc does not support protobuf editions")
  message(FATAL_ERROR "protoc failed without the plugin's message: ${err}")
endif()
message(STATUS "refused as expected: ${err}")
