# The decisions family's suites (server/decisions). Included from tests/CMakeLists.txt.
switchyard_test(tst_decision_validation
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_decision_validation.cpp
    LIBS switchyard_family_decisions)
switchyard_test(tst_decisions_http SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_decisions_http.cpp
    LIBS switchyard_serverfixture switchyard_fakeupstream switchyard_family_decisions TIMEOUT 300)
