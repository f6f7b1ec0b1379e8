# multipart/form-data (server/http/Multipart): the Qt Test suite, and the libFuzzer target
# built with clang outside this build and run for 20 s. Included from tests/CMakeLists.txt.
switchyard_test(tst_multipart SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_multipart.cpp
    LIBS switchyard_core)
switchyard_test(fuzz_multipart
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fuzz_multipart.sh 20
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_multipart
    TIMEOUT 600 LABELS fuzz)
