# Qt Test suites for the window (ui/): panels driven like a user (offscreen), against a real
# SQLite database. Included from tests/CMakeLists.txt; reuses tests/itemmodels/TestDatabase.h.
# Headless builds (SWITCHYARD_BUILD_GUI=OFF) have no switchyard_ui and skip these.
if(NOT TARGET switchyard_ui)
    return()
endif()
# Extra libraries and definitions per suite:
#   revokeendtoend  talks to the embedded server over HTTP;
#   providers_panel tests connections against the fake upstream program;
#   address_panel   imports the project's own fixture files;
#   webhook_panel   a real server with the image-task family, the fake upstream and an HTTPS
#                   webhook receiver (tests/images/ImagesTestSupport.h for the images section).
set(_sy_ui_revokeendtoend_libs Qt6::Network)
set(_sy_ui_providers_panel_libs Qt6::Network switchyard_fakeupstream)
set(_sy_ui_address_panel_definitions FIXTURE_DIR="${CMAKE_CURRENT_LIST_DIR}/../address/data")
set(_sy_ui_webhook_panel_libs switchyard_serverfixture switchyard_fakeupstream
    switchyard_webhookreceiver switchyard_family_images)
set(_sy_ui_webhook_panel_includes ${CMAKE_CURRENT_LIST_DIR}/../images)
#   social_panel    a real server with the social-data family and the fake upstream serving
#                   the shared TikHub catalog.
set(_sy_ui_social_panel_libs switchyard_serverfixture switchyard_fakeupstream
    switchyard_family_social)
set(_sy_ui_social_panel_definitions
    SOCIAL_OPENAPI="${PROJECT_SOURCE_DIR}/../shared/data/social/openapi-upstream.json")
foreach(suite apikeyspanel controltokenspanel creditspanel usagepanel mainwindow
        revokeendtoend providers_panel address_panel audio_panel webhook_panel social_panel)
    switchyard_test(ui.${suite} TARGET tst_ui_${suite}
        SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_${suite}.cpp
                ${CMAKE_CURRENT_LIST_DIR}/../itemmodels/TestDatabase.h
        INCLUDES ${CMAKE_CURRENT_LIST_DIR}/../itemmodels ${_sy_ui_${suite}_includes}
        LIBS switchyard_ui ${_sy_ui_${suite}_libs}
        DEFINITIONS ${_sy_ui_${suite}_definitions}
        TIMEOUT 120)
endforeach()
