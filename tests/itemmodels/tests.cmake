# Qt Test suites for the shared item models (models/*Model*), each under
# QAbstractItemModelTester against a real SQLite database. Included from tests/CMakeLists.txt.
foreach(suite apikeymodel controltokenmodel ledgermodel usagemodel usagebucketmodel)
    switchyard_test(itemmodels.${suite} TARGET tst_itemmodels_${suite}
        SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_${suite}.cpp ${CMAKE_CURRENT_LIST_DIR}/TestDatabase.h
        INCLUDES ${CMAKE_CURRENT_LIST_DIR}
        LIBS switchyard_models
        TIMEOUT 120)
endforeach()
# DatabaseService's money path (writeMoney) into the live ledger and usage models, on SQLite and
# PostgreSQL.
switchyard_test(itemmodels.moneypath TARGET tst_itemmodels_moneypath
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_moneypath.cpp
    LIBS switchyard_testsupport
    TIMEOUT 120)
