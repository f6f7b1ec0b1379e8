# Qt Test suites for the window (ui/): panels driven like a user (offscreen), against a real
# SQLite database. Included from tests/CMakeLists.txt; reuses tests/itemmodels/TestDatabase.h.
# Headless builds (SWITCHYARD_BUILD_GUI=OFF) have no switchyard_ui and skip these.
if(NOT TARGET switchyard_ui)
    return()
endif()
foreach(suite apikeyspanel controltokenspanel creditspanel usagepanel mainwindow
        revokeendtoend providers_panel address_panel)
    add_executable(tst_ui_${suite}
        ${CMAKE_CURRENT_LIST_DIR}/tst_${suite}.cpp
        ${CMAKE_CURRENT_LIST_DIR}/../itemmodels/TestDatabase.h)
    target_include_directories(tst_ui_${suite} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../itemmodels)
    target_link_libraries(tst_ui_${suite} PRIVATE switchyard_ui Qt6::Test)
    add_test(NAME ui.${suite} COMMAND tst_ui_${suite})
    set_tests_properties(ui.${suite} PROPERTIES
        ENVIRONMENT QT_QPA_PLATFORM=offscreen
        TIMEOUT 120)
endforeach()
# The end-to-end suite talks to the embedded server over HTTP.
target_link_libraries(tst_ui_revokeendtoend PRIVATE Qt6::Network)
# The providers suite tests connections against the fake upstream program.
target_link_libraries(tst_ui_providers_panel PRIVATE Qt6::Network switchyard_fakeupstream)
# The address panel imports the project's own fixture files.
target_compile_definitions(tst_ui_address_panel PRIVATE
    FIXTURE_DIR="${CMAKE_CURRENT_LIST_DIR}/../address/data")
