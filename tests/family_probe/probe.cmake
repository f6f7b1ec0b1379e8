# A test-only service family (tests/family_probe): a table, routes (one billed, with a usage meter),
# a command and a panel, added to the program's server, command line and window through their
# registries alone. Included from tests/CMakeLists.txt; needs the window (SWITCHYARD_BUILD_GUI).
if(NOT TARGET switchyard_ui)
    return()
endif()
switchyard_test(tst_family_probe
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_family_probe.cpp
            ${CMAKE_CURRENT_LIST_DIR}/ProbeFamily.cpp ${CMAKE_CURRENT_LIST_DIR}/ProbeFamily.h
            ${CMAKE_CURRENT_LIST_DIR}/ProbePanel.cpp
    LIBS switchyard_ui switchyard_app switchyard_serverfixture
    TIMEOUT 120)
