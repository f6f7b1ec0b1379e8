# Qt Test suites for the shared item models (models/*Model*), each under
# QAbstractItemModelTester against a real SQLite database. Included from tests/CMakeLists.txt.
foreach(suite apikeymodel controltokenmodel ledgermodel usagemodel usagebucketmodel)
    add_executable(tst_itemmodels_${suite}
        ${CMAKE_CURRENT_LIST_DIR}/tst_${suite}.cpp
        ${CMAKE_CURRENT_LIST_DIR}/TestDatabase.h)
    target_include_directories(tst_itemmodels_${suite} PRIVATE ${CMAKE_CURRENT_LIST_DIR})
    target_link_libraries(tst_itemmodels_${suite} PRIVATE switchyard_models Qt6::Test)
    add_test(NAME itemmodels.${suite} COMMAND tst_itemmodels_${suite})
    set_tests_properties(itemmodels.${suite} PROPERTIES
        ENVIRONMENT QT_QPA_PLATFORM=offscreen
        TIMEOUT 120)
endforeach()
