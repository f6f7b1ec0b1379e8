# The text gateway's suites (server/llm). Included from tests/CMakeLists.txt.
switchyard_test(tst_gateway SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_gateway.cpp
    LIBS switchyard_serverfixture switchyard_fakeupstream)
switchyard_test(tst_llm SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_llm.cpp LIBS switchyard_serverfixture)
