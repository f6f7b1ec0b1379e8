# The image-task family's suites (server/images). Included from tests/CMakeLists.txt.
switchyard_test(tst_images_http SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_images_http.cpp
    ${CMAKE_CURRENT_LIST_DIR}/ImagesTestSupport.h
    LIBS switchyard_serverfixture switchyard_fakeupstream switchyard_family_images TIMEOUT 600)
