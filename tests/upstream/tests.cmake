# The shared outbound pieces' suites (server/upstream). Included from tests/CMakeLists.txt.
switchyard_test(tst_url_guard SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_url_guard.cpp
    LIBS switchyard_upstream switchyard_webhookreceiver Qt6::Network)
switchyard_test(tst_webhook_receiver SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_webhook_receiver.cpp
    LIBS switchyard_webhookreceiver switchyard_upstream Qt6::Network)
# ProviderCall, the one upstream call of every family, against the fake upstream.
switchyard_test(tst_provider_call SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_provider_call.cpp
    LIBS switchyard_upstream switchyard_fakeupstream Qt6::Network)
# The URL guard's libFuzzer target, built with clang outside this build, run for 20 s.
switchyard_test(fuzz_url_guard
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/upstream/fuzz_url_guard.sh 20
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_url_guard
    TIMEOUT 600 LABELS fuzz)
include(${CMAKE_CURRENT_LIST_DIR}/http1.cmake) # Http1Response and Http1Client (server/upstream)
# JsonScan's libFuzzer target (the relays' scanner of upstream answers), run for 20 s.
switchyard_test(fuzz_json_scan
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/upstream/fuzz_json_scan.sh 20
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_json_scan
    TIMEOUT 600 LABELS fuzz)
