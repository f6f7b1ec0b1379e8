# The plain-HTTP/1.1 upstream client (server/upstream/Http1Client, Http1Response): the response
# parser's suite and its libFuzzer target (built with clang outside this build, run for 20 s),
# and the client's suite, which runs every case through Http1Client and through libcurl.
# Included from tests/CMakeLists.txt.
switchyard_test(tst_http1_response SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_http1_response.cpp
    LIBS switchyard_upstream)
switchyard_test(fuzz_http1_response
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fuzz_http1_response.sh 20
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_http1_response
    TIMEOUT 600 LABELS fuzz)
switchyard_test(tst_upstream_client SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_upstream_client.cpp
    LIBS switchyard_upstream Qt6::Network)
