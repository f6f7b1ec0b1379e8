# The storage and money suites (models/). Included from tests/CMakeLists.txt.
switchyard_test(tst_money SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_money.cpp)
switchyard_test(tst_store SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_store.cpp)
# tst_ledger reads a connection's page cache through SQLite's own API.
find_package(SQLite3 REQUIRED)
switchyard_test(tst_ledger SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_ledger.cpp LIBS SQLite::SQLite3)

add_executable(charge_burst ${CMAKE_CURRENT_LIST_DIR}/charge_burst.cpp)
target_link_libraries(charge_burst PRIVATE switchyard_models)
switchyard_test(tst_sigkill SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_sigkill.cpp
    DEPENDS charge_burst DEFINITIONS CHARGE_BURST_PATH="$<TARGET_FILE:charge_burst>")
switchyard_test(tst_key_rules SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_key_rules.cpp)
