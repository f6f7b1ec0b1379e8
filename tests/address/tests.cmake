# The address family's suites (server/address). Included from tests/CMakeLists.txt.
switchyard_test(tst_coord SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_coord.cpp LIBS switchyard_address)
switchyard_test(tst_gazetteer SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_gazetteer.cpp LIBS switchyard_address)
switchyard_test(tst_phone SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_phone.cpp LIBS switchyard_address)
switchyard_test(tst_division SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_division.cpp LIBS switchyard_address)
# division-code vs the labelled development set (skips, code 77, when the set is absent).
switchyard_test(tst_division_eval TARGET eval_division PROGRAM
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/eval_division.cpp LIBS switchyard_address
    DEFINITIONS DEFAULT_STRUCTURE_DEV="${PROJECT_SOURCE_DIR}/../shared/data/address/structure-dev.txt"
    ARGS --floor 0.98 SKIP_RETURN_CODE 77 TIMEOUT 300)
switchyard_test(tst_address_api SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_address_api.cpp LIBS switchyard_address)
switchyard_test(tst_structure SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_structure.cpp LIBS switchyard_address)
switchyard_test(tst_search SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_search.cpp LIBS switchyard_address)
switchyard_test(tst_normalize SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_normalize.cpp LIBS switchyard_address
    DEFINITIONS NORMALIZE_CASES="${CMAKE_CURRENT_SOURCE_DIR}/address/data/normalize-cases.tsv")
switchyard_test(tst_assessment SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_assessment.cpp LIBS switchyard_address)
# Prints input-search latency (p50/p99/max) and search calls/s; registers no test.
add_executable(bench_search ${CMAKE_CURRENT_LIST_DIR}/bench_search.cpp)
target_link_libraries(bench_search PRIVATE switchyard_address)
# structure vs the labelled development set (skips, code 77, when the set is absent).
switchyard_test(tst_structure_eval TARGET eval_structure PROGRAM
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/eval_structure.cpp LIBS switchyard_address
    DEFINITIONS DEFAULT_STRUCTURE_DEV="${PROJECT_SOURCE_DIR}/../shared/data/address/structure-dev.txt"
    ARGS --floor 0.905 SKIP_RETURN_CODE 77 TIMEOUT 300)
switchyard_test(tst_extraction SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_extraction.cpp LIBS switchyard_address)
# Names, phones and express labels vs the project's own labelled set (tests/address/data).
switchyard_test(tst_extraction_eval TARGET eval_extraction PROGRAM
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/eval_extraction.cpp LIBS switchyard_address
    DEFINITIONS
        DEFAULT_EXTRACTION_SET="${CMAKE_CURRENT_SOURCE_DIR}/address/data/extraction-set.tsv"
        DEFAULT_STRUCTURE_DEV="${PROJECT_SOURCE_DIR}/../shared/data/address/structure-dev.txt"
    ARGS --floor 0.95)
switchyard_test(tst_address_http SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_address_http.cpp LIBS switchyard_serverfixture
    DEFINITIONS FIXTURE_DIR="${CMAKE_CURRENT_SOURCE_DIR}/address/data")
switchyard_test(tst_local_data SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_local_data.cpp LIBS switchyard_address
    DEFINITIONS FIXTURE_DIR="${CMAKE_CURRENT_SOURCE_DIR}/address/data")
switchyard_test(tst_address_data SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_address_data.cpp LIBS switchyard_server
    DEPENDS switchyard-server
    DEFINITIONS SERVER_BINARY="$<TARGET_FILE:switchyard-server>"
                FIXTURE_DIR="${CMAKE_CURRENT_SOURCE_DIR}/address/data")
# Imported zip codes and POIs at scale: parse, build, calls/s, import and load; registers no test.
add_executable(bench_local_data ${CMAKE_CURRENT_LIST_DIR}/bench_local_data.cpp)
target_link_libraries(bench_local_data PRIVATE switchyard_server)
switchyard_test(tst_address_upstream SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_address_upstream.cpp
    LIBS switchyard_serverfixture)
