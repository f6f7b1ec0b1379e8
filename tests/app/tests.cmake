# The programs' suites (app/). Included from tests/CMakeLists.txt.
switchyard_test(tst_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_cli.cpp LIBS switchyard_serverfixture
    DEPENDS switchyard-server DEFINITIONS SERVER_BINARY="$<TARGET_FILE:switchyard-server>")
switchyard_test(tst_memory_trim SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_memory_trim.cpp LIBS switchyard_app)
# Owner-only data directory, database, WAL and config files, fixed at start when wider.
switchyard_test(tst_file_modes SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_file_modes.cpp LIBS switchyard_app
    DEPENDS switchyard-server DEFINITIONS SERVER_BINARY="$<TARGET_FILE:switchyard-server>")
switchyard_test(tst_gateway_sigkill SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_gateway_sigkill.cpp
    LIBS Qt6::Network switchyard_fakeupstream
    DEPENDS switchyard-server DEFINITIONS SERVER_BINARY="$<TARGET_FILE:switchyard-server>")
