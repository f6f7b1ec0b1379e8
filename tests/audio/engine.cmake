# The local audio engines (server/audio/engine): decoding, synthesis, recognition.
# Included from tests/CMakeLists.txt; the suites need only switchyard_audio and Debian's
# engine data (pocketsphinx-en-us, pocketsphinx-testdata) and the ffmpeg program for fixtures.
switchyard_test(tst_speech SOURCES audio/tst_speech.cpp audio/AudioTestUtil.h
    LIBS switchyard_audio TIMEOUT 120)
switchyard_test(tst_audio_decoder SOURCES audio/tst_audio_decoder.cpp audio/AudioTestUtil.h
    LIBS switchyard_audio TIMEOUT 120)
# LONG_SECONDS: the long-input cases' length (each); pocketsphinx runs at about 0.23 of real time.
switchyard_test(tst_recognizer SOURCES audio/tst_recognizer.cpp audio/AudioTestUtil.h
    LIBS switchyard_audio TIMEOUT 180
    DEFINITIONS SENTENCES_FILE="${CMAKE_CURRENT_SOURCE_DIR}/audio/data/sentences.txt"
                LONG_SECONDS=30)
# The README's figures (round-trip WER, testdata WER, recognition speed, TTS latency); no test.
add_executable(bench_audio_engine audio/bench_audio_engine.cpp audio/AudioTestUtil.h)
target_link_libraries(bench_audio_engine PRIVATE switchyard_audio)
target_compile_definitions(bench_audio_engine PRIVATE
    SENTENCES_FILE="${CMAKE_CURRENT_SOURCE_DIR}/audio/data/sentences.txt")
