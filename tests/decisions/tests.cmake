# The decisions family's suites (server/decisions). Included from tests/CMakeLists.txt.
switchyard_test(tst_decision_validation
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_decision_validation.cpp
    LIBS switchyard_family_decisions)
switchyard_test(tst_decisions_http SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_decisions_http.cpp
    LIBS switchyard_serverfixture switchyard_fakeupstream switchyard_family_decisions TIMEOUT 300)
# The chat evaluator: its pure part, then over HTTP through the fake upstream.
switchyard_test(tst_decision_chat_answer
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_decision_chat_answer.cpp
    LIBS switchyard_family_decisions)
switchyard_test(tst_decisions_chat SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_decisions_chat.cpp
    LIBS switchyard_serverfixture switchyard_fakeupstream switchyard_family_decisions TIMEOUT 300)
