# The HTTP request head parser (server/http/HttpHead): its Qt Test suite, and its libFuzzer
# target built with clang outside this build and run for 20 s (tst_http covers it through the
# server). Included from tests/CMakeLists.txt.
switchyard_test(tst_http_head SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_http_head.cpp
    LIBS switchyard_core)
switchyard_test(fuzz_http_head
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fuzz_http_head.sh 20
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_http_head
    TIMEOUT 600 LABELS fuzz)
