# The social-data family's suites (server/social). Included from tests/CMakeLists.txt.
include(${CMAKE_CURRENT_LIST_DIR}/engine.cmake) # the social-data engine (server/social/engine)
include(${CMAKE_CURRENT_LIST_DIR}/extract.cmake) # video extraction (server/social/engine)
switchyard_test(tst_social_http SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_social_http.cpp
    LIBS switchyard_serverfixture switchyard_fakeupstream switchyard_family_social
    DEFINITIONS SOCIAL_OPENAPI="${PROJECT_SOURCE_DIR}/../shared/data/social/openapi-upstream.json"
    TIMEOUT 300)
