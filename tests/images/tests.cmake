# The image-task family's suites (server/images). Included from tests/CMakeLists.txt.
switchyard_test(tst_images_family SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_images_family.cpp
    LIBS switchyard_family_images)
switchyard_test(tst_images_http SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_images_http.cpp
    ${CMAKE_CURRENT_LIST_DIR}/ImagesTestSupport.h
    LIBS switchyard_serverfixture switchyard_fakeupstream switchyard_family_images TIMEOUT 600)
switchyard_test(tst_webhooks SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_webhooks.cpp
    ${CMAKE_CURRENT_LIST_DIR}/ImagesTestSupport.h
    LIBS switchyard_serverfixture switchyard_fakeupstream switchyard_webhookreceiver
        switchyard_family_images TIMEOUT 600)
# The README's webhook figures (deliveries/s, memory and size with pending deliveries, the
# schedule's actual delays); a program, no test.
add_executable(bench_webhooks ${CMAKE_CURRENT_LIST_DIR}/bench_webhooks.cpp)
target_link_libraries(bench_webhooks PRIVATE switchyard_serverfixture switchyard_fakeupstream
    switchyard_webhookreceiver switchyard_family_images Qt6::Test)
switchyard_test(tst_webhooks_restart SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_webhooks_restart.cpp
    LIBS switchyard_serverfixture switchyard_fakeupstream switchyard_webhookreceiver Qt6::Network
    DEPENDS switchyard-server DEFINITIONS SERVER_BINARY="$<TARGET_FILE:switchyard-server>"
    TIMEOUT 300)
# Image money on the one money path: the live ledger and usage models, the credit gate, /metrics.
switchyard_test(tst_images_money SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_images_money.cpp
    ${CMAKE_CURRENT_LIST_DIR}/ImagesTestSupport.h
    LIBS switchyard_serverfixture switchyard_fakeupstream switchyard_family_images TIMEOUT 600)
