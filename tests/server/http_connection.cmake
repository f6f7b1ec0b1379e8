# The request side of an HTTP connection (server/http/HttpRequestReader): its Qt Test suite, and
# its libFuzzer target, pipelined byte streams fed in reads of every size, built with clang
# outside this build and run for 20 s (tst_http and tst_hostile_clients cover it through the
# server). Included from tests/CMakeLists.txt.
switchyard_test(tst_http_reader SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_http_reader.cpp
    LIBS switchyard_core)
switchyard_test(fuzz_http_connection
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fuzz_http_connection.sh 20
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_http_connection
    TIMEOUT 600 LABELS fuzz)
