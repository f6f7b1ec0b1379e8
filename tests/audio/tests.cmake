# The audio family's suites (server/audio); the engines' own suites are in engine.cmake.
# Included from tests/CMakeLists.txt.
include(${CMAKE_CURRENT_LIST_DIR}/engine.cmake) # the local audio engines (server/audio/engine)
switchyard_test(tst_audio_family SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_audio_family.cpp
    LIBS switchyard_family_audio)
switchyard_test(tst_audio_http SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_audio_http.cpp
    ${CMAKE_CURRENT_LIST_DIR}/AudioTestSupport.h ${CMAKE_CURRENT_LIST_DIR}/AudioHttpSupport.h
    LIBS switchyard_serverfixture switchyard_family_audio TIMEOUT 600)
switchyard_test(tst_audio_playground SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_audio_playground.cpp
    LIBS switchyard_family_audio TIMEOUT 120)
switchyard_test(tst_audio_upstream SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_audio_upstream.cpp
    ${CMAKE_CURRENT_LIST_DIR}/AudioTestSupport.h ${CMAKE_CURRENT_LIST_DIR}/AudioHttpSupport.h
    LIBS switchyard_serverfixture switchyard_fakeupstream switchyard_family_audio TIMEOUT 600)
