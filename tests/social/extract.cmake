# Video-URL extraction (server/social/engine/VideoExtract.h): detect, nextCall and normalize
# over the fake upstream's video data (tests/fake_upstream/SocialVideoFakes.cpp, compiled in).
switchyard_test(tst_video_extract SOURCES social/tst_video_extract.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/fake_upstream/SocialVideoFakes.cpp
    LIBS switchyard_social
    INCLUDES ${CMAKE_CURRENT_SOURCE_DIR}/fake_upstream)
# detect()'s libFuzzer target, built with clang outside this build, run for 20 s.
switchyard_test(fuzz_video_extract
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/social/fuzz_video_extract.sh 20
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_video_extract
    TIMEOUT 600 LABELS fuzz)
